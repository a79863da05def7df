package apiserver

import (
	"mime"
	"net/http"
	"runtime"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/responses"
)

// Version is what /version reports. kubectl picks its own minor version
// from it, so it names the Kubernetes release whose API trustplane serves.
var Version = version.Info{
	Major:        "1",
	Minor:        "32",
	GitVersion:   "v1.32.0+trustplane",
	GitTreeState: "clean",
	GoVersion:    runtime.Version(),
	Compiler:     runtime.Compiler,
	Platform:     runtime.GOOS + "/" + runtime.GOARCH,
}

// aggregatedMediaType is the aggregated discovery document's content type.
const aggregatedMediaType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// discovery answers the discovery documents: aggregated (apidiscovery.k8s.io
// v2) on /api and /apis for clients that ask for it, and the legacy
// documents on /api, /apis, /apis/<group> and every group version.
type discovery struct {
	groups     []metav1.APIGroup
	versions   map[string]*metav1.APIResourceList // by group version, "v1" for core
	aggregated map[string]*apidiscoveryv2.APIGroupDiscoveryList
}

func newDiscovery(reg *registry.Registry) *discovery {
	d := &discovery{versions: map[string]*metav1.APIResourceList{}}
	core := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	groups := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: core.TypeMeta}
	aggGroups := map[string]*apidiscoveryv2.APIGroupDiscovery{}
	for _, res := range reg.All() {
		gv := res.GVR.GroupVersion()
		list, ok := d.versions[gv.String()]
		if !ok {
			list = &metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: gv.String(),
			}
			d.versions[gv.String()] = list
			if gv.Group != "" {
				gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
				d.groups = append(d.groups, metav1.APIGroup{
					TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
					Name:             gv.Group,
					Versions:         []metav1.GroupVersionForDiscovery{gvd},
					PreferredVersion: gvd,
				})
			}
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         res.GVR.Resource,
			SingularName: res.Singular,
			Namespaced:   res.Namespaced,
			Kind:         res.Kind,
			Verbs:        res.Verbs(),
			ShortNames:   res.ShortNames,
			Categories:   res.Categories,
		})
		for _, sub := range res.Subresources {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name:       res.GVR.Resource + "/" + sub.Name,
				Namespaced: res.Namespaced,
				Group:      sub.Kind.Group,
				Version:    sub.Kind.Version,
				Kind:       sub.Kind.Kind,
				Verbs:      sub.Verbs,
			})
		}

		g, ok := aggGroups[gv.Group]
		if !ok {
			g = &apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}}
			aggGroups[gv.Group] = g
		}
		if len(g.Versions) == 0 || g.Versions[len(g.Versions)-1].Version != gv.Version {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
		}
		v := &g.Versions[len(g.Versions)-1]
		scope := apidiscoveryv2.ScopeCluster
		if res.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		rd := apidiscoveryv2.APIResourceDiscovery{
			Resource:         res.GVR.Resource,
			ResponseKind:     &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: res.Kind},
			Scope:            scope,
			SingularResource: res.Singular,
			Verbs:            res.Verbs(),
			ShortNames:       res.ShortNames,
			Categories:       res.Categories,
		}
		for _, sub := range res.Subresources {
			rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource:  sub.Name,
				ResponseKind: &metav1.GroupVersionKind{Group: sub.Kind.Group, Version: sub.Kind.Version, Kind: sub.Kind.Kind},
				Verbs:        sub.Verbs,
			})
		}
		v.Resources = append(v.Resources, rd)
	}
	if g, ok := aggGroups[""]; ok {
		core.Items = append(core.Items, *g)
	}
	for _, g := range d.groups {
		groups.Items = append(groups.Items, *aggGroups[g.Name])
	}
	d.aggregated = map[string]*apidiscoveryv2.APIGroupDiscoveryList{"/api": core, "/apis": groups}
	return d
}

// wantsAggregated reports whether the Accept header asks for aggregated
// discovery v2 before anything else it accepts.
func wantsAggregated(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mediaType == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList" {
			return true
		}
		if mediaType == "application/json" && params["as"] == "" {
			// Plain JSON comes first: the legacy documents.
			return false
		}
	}
	return false
}

// serve answers a discovery path, reporting whether it was one.
func (d *discovery) serve(w http.ResponseWriter, r *http.Request, respond *responses.Writer) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	w.Header().Set("Vary", "Accept")
	if agg, ok := d.aggregated[path]; ok && wantsAggregated(r) {
		respond.JSONAs(w, r, http.StatusOK, aggregatedMediaType, agg)
		return true
	}
	switch {
	case path == "/api":
		respond.JSONAs(w, r, http.StatusOK, "application/json", &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		})
	case path == "/api/v1":
		respond.JSONAs(w, r, http.StatusOK, "application/json", d.versions["v1"])
	case path == "/apis":
		respond.JSONAs(w, r, http.StatusOK, "application/json", &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups:   d.groups,
		})
	case strings.HasPrefix(path, "/apis/"):
		rest := strings.TrimPrefix(path, "/apis/")
		if list, ok := d.versions[rest]; ok && strings.Contains(rest, "/") {
			respond.JSONAs(w, r, http.StatusOK, "application/json", list)
			return true
		}
		for i := range d.groups {
			if d.groups[i].Name == rest {
				respond.JSONAs(w, r, http.StatusOK, "application/json", &d.groups[i])
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}
