package apiserver

import (
	"net/http"
	"runtime"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
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

// discovery answers the legacy discovery documents: /api, /apis, and one
// per group and group version.
type discovery struct {
	groups   []metav1.APIGroup
	versions map[string]*metav1.APIResourceList // by group version, "v1" for core
}

func newDiscovery(reg *registry) *discovery {
	d := &discovery{versions: map[string]*metav1.APIResourceList{}}
	for _, res := range reg.all {
		gv := res.gvr.GroupVersion()
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
			Name:         res.gvr.Resource,
			SingularName: res.singular,
			Namespaced:   res.namespaced,
			Kind:         res.kind,
			Verbs:        servedVerbs,
			ShortNames:   res.shortNames,
		})
	}
	return d
}

// serve answers a discovery path, reporting whether it was one.
func (d *discovery) serve(w http.ResponseWriter, r *http.Request, respond *responder) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/api":
		respond.json(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		})
	case path == "/api/v1":
		respond.json(w, http.StatusOK, d.versions["v1"])
	case path == "/apis":
		respond.json(w, http.StatusOK, &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups:   d.groups,
		})
	case strings.HasPrefix(path, "/apis/"):
		rest := strings.TrimPrefix(path, "/apis/")
		if list, ok := d.versions[rest]; ok && strings.Contains(rest, "/") {
			respond.json(w, http.StatusOK, list)
			return true
		}
		for i := range d.groups {
			if d.groups[i].Name == rest {
				respond.json(w, http.StatusOK, &d.groups[i])
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}
