package apiserver

import (
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/filters"
	"github.com/trustplane/trustplane/apiserver/handlers"
	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/rbac"
)

// refuser is a validating admission plugin that refuses every request of
// one user, whatever it is.
type refuser struct {
	*admission.Handler
	user string
}

var _ admission.ValidationInterface = refuser{}

const refusal = "refused by the test's admission plugin"

func (p refuser) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetUserInfo().GetName() != p.user {
		return nil
	}
	return admission.NewForbidden(a, errors.New(refusal))
}

// stageLog records the write stages entered by one user's requests.
type stageLog struct {
	user    string
	mu      sync.Mutex // guards entered
	entered []string
}

func (l *stageLog) observe(ctx context.Context, stage string) {
	if u, ok := request.UserFrom(ctx); !ok || u.GetName() != l.user {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entered = append(l.entered, stage)
}

func (l *stageLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.entered
	l.entered = nil
	return out
}

// writeRouteCase is one write route of the registry: a verb on a resource
// or subresource, and for a patch its type.
type writeRouteCase struct {
	res         *registry.Resource
	subresource string
	verb        string
	patchType   types.PatchType
	// missing: the object does not exist (an apply then creates it).
	missing bool
}

func (c writeRouteCase) String() string {
	s := c.verb + " " + c.res.GVR.GroupResource().String()
	if c.subresource != "" {
		s += "/" + c.subresource
	}
	if c.patchType != "" {
		s += " (" + string(c.patchType) + ")"
	}
	if c.missing {
		s += " of a missing object"
	}
	return s
}

var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// writeRouteCases lists every write route the registry serves: each write
// verb of each resource and subresource, and each patch type.
func writeRouteCases(reg *registry.Registry) []writeRouteCase {
	var out []writeRouteCase
	add := func(res *registry.Resource, sub string, verbs metav1.Verbs) {
		for _, verb := range verbs {
			if !slices.Contains(writeVerbs, verb) {
				continue
			}
			if verb != "patch" {
				out = append(out, writeRouteCase{res: res, subresource: sub, verb: verb})
				continue
			}
			for _, pt := range []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType} {
				out = append(out, writeRouteCase{res: res, subresource: sub, verb: verb, patchType: pt})
			}
			if sub == "" && res.Review == nil {
				out = append(out, writeRouteCase{res: res, verb: verb, patchType: types.ApplyYAMLPatchType, missing: true})
			}
		}
	}
	for _, res := range reg.All() {
		add(res, "", res.Verbs())
		for _, sub := range res.Subresources {
			add(res, sub.Name, sub.Verbs)
		}
	}
	return out
}

const doorNS = "door"

// doorFixtures are one valid object of each kind the registry stores or
// reviews, by kind, all named "door" in namespace "door" and labelled
// door=fixture. A kind without one fails TestEveryWriteRouteIsAdmitted.
func doorFixtures() map[schema.GroupVersionKind]runtime.Object {
	om := func(namespaced bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "door", Labels: map[string]string{"door": "fixture"}}
		if namespaced {
			m.Namespace = doorNS
		}
		return m
	}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "door"}}, Spec: podSpec}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "door"}}
	now := metav1.NewMicroTime(time.Now())
	resourceAttrs := &authorizationv1.ResourceAttributes{Namespace: doorNS, Verb: "get", Resource: "pods"}
	rules := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}}
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doorNS, Labels: map[string]string{"door": "fixture"}}},
		&corev1.ConfigMap{ObjectMeta: om(true), Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: om(true), Data: map[string][]byte{"k": []byte("v")}},
		&rbacv1.ClusterRole{ObjectMeta: om(false), Rules: rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: om(false), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "door"}, Subjects: subjects},
		&rbacv1.Role{ObjectMeta: om(true), Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: om(true), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "door"}, Subjects: subjects},
		&corev1.Pod{ObjectMeta: om(true), Spec: podSpec},
		&corev1.Node{ObjectMeta: om(false)},
		&corev1.ServiceAccount{ObjectMeta: om(true)},
		&corev1.Event{ObjectMeta: om(true), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: doorNS, Name: "door"}, Reason: "Test", Message: "m", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "door"}},
		&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "door-v1", Namespace: doorNS, Labels: map[string]string{"door": "fixture"}}, EventTime: now, ReportingController: "example.com/door", ReportingInstance: "door-1", Action: "Test", Reason: "Test", Type: corev1.EventTypeNormal, Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: doorNS, Name: "door"}},
		&appsv1.Deployment{ObjectMeta: om(true), Spec: appsv1.DeploymentSpec{Selector: selector, Template: template}},
		&appsv1.ReplicaSet{ObjectMeta: om(true), Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: template}},
		&appsv1.StatefulSet{ObjectMeta: om(true), Spec: appsv1.StatefulSetSpec{Selector: selector, Template: template}},
		&appsv1.DaemonSet{ObjectMeta: om(true), Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template}},
		&appsv1.ControllerRevision{ObjectMeta: om(true), Data: runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}, Revision: 1},
		&coordinationv1.Lease{ObjectMeta: om(true)},
		&corev1.Service{ObjectMeta: om(true), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "door"}, Ports: []corev1.ServicePort{{Port: 80}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: om(true), AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.2.3"}}}},
		&certificatesv1.CertificateSigningRequest{ObjectMeta: om(false), Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: csrPEM(pkix.Name{CommonName: "door"}), SignerName: "example.com/door", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		}},
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: resourceAttrs}},
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: doorNS}},
		&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "someone", ResourceAttributes: resourceAttrs}},
		&authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: doorNS}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "someone", ResourceAttributes: resourceAttrs}},
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}},
		&authenticationv1.SelfSubjectReview{},
	}
	scheme, err := registry.NewScheme()
	if err != nil {
		panic(err)
	}
	out := map[schema.GroupVersionKind]runtime.Object{}
	for _, obj := range objs {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil {
			panic(err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		out[gvks[0]] = obj
	}
	return out
}

// Every write route the registry serves goes through the one write path:
// a validating admission plugin that refuses everything refuses each of
// them, after the stages before it ran in order; and the audit event of
// each carries the request object when its level asks for it. The routes
// come from the registry, so a route added later is tried too, and fails
// here until it has a fixture.
//
// The refusal comes once from a Go admission plugin, once from a Rego
// policy of the admission stage; each route is sent as is and with
// dryRun=All.
func TestEveryWriteRouteIsAdmitted(t *testing.T) {
	const refusedUser = "refused"
	policy, err := opa.Compile(context.Background(), map[string][]byte{"refuse.rego": []byte(`package kubernetes.admission

deny contains "` + refusal + `" if input.request.userInfo.username == "` + refusedUser + `"
`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, refuse := range []struct {
		name   string
		option serverOption
	}{
		{"go plugin", func(c *Config) {
			c.extraAdmission = append(c.extraAdmission, refuser{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete, admission.Connect), user: refusedUser})
		}},
		{"rego policy", func(c *Config) { c.AdmissionPolicies = policy }},
	} {
		t.Run(refuse.name, func(t *testing.T) { everyWriteRouteRefused(t, refusedUser, refuse.option) })
	}
}

func everyWriteRouteRefused(t *testing.T, refusedUser string, refuse serverOption) {
	log := &stageLog{user: refusedUser}
	ts := startServer(t, refuse, func(c *Config) { c.observeWrite = log.observe })
	adminClient := ts.httpClient(t, admin)
	refused := ts.httpClient(t, &identity{user: refusedUser, groups: []string{rbac.ClusterAdminsGroup}})
	fixtures := doorFixtures()

	// Make the objects the writes are about, as admin.
	paths := map[schema.GroupResource]func(name string) string{}
	for _, res := range ts.server.registry.All() {
		base := "/api/" + res.GVR.Version
		if res.GVR.Group != "" {
			base = "/apis/" + res.GVR.Group + "/" + res.GVR.Version
		}
		if res.Namespaced {
			base += "/namespaces/" + doorNS
		}
		base += "/" + res.GVR.Resource
		paths[res.GVR.GroupResource()] = func(name string) string {
			if name == "" {
				return ts.url + base
			}
			return ts.url + base + "/" + name
		}
	}
	pathOf := func(res *registry.Resource, name string) string { return paths[res.GVR.GroupResource()](name) }
	nameOf := func(res *registry.Resource) string {
		if res.GVR.Resource == "namespaces" {
			return doorNS
		}
		if res.GVR.Group == eventsv1.GroupName {
			return "door-v1"
		}
		return "door"
	}
	send := func(c *http.Client, method, url, contentType string, body []byte) (*http.Response, []byte) {
		t.Helper()
		resp := do(t, c, method, url, contentType, string(body))
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp, out
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var stored []*registry.Resource
	for _, res := range ts.server.registry.All() {
		if res.Review != nil {
			continue
		}
		stored = append(stored, res)
	}
	// The namespace first.
	slices.SortStableFunc(stored, func(a, b *registry.Resource) int {
		return boolInt(b.GVR.Resource == "namespaces") - boolInt(a.GVR.Resource == "namespaces")
	})
	for _, res := range stored {
		obj, ok := fixtures[res.GVK()]
		if !ok {
			t.Errorf("no fixture of %s: add one to doorFixtures", res.GVK())
			continue
		}
		if resp, body := send(adminClient, http.MethodPost, pathOf(res, ""), "application/json", mustJSON(obj)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create fixture %s: %d %s", res.GVK(), resp.StatusCode, body)
		}
		if res.GVR.Resource == "namespaces" {
			ts.defaultServiceAccount(t, doorNS)
		}
	}

	for _, c := range writeRouteCases(ts.server.registry) {
		t.Run(c.String(), func(t *testing.T) {
			fixture, ok := fixtures[c.res.GVK()]
			if !ok {
				t.Fatalf("no fixture of %s: add one to doorFixtures", c.res.GVK())
			}
			name := nameOf(c.res)
			if c.missing {
				name += "-missing"
			}
			url := pathOf(c.res, name)
			if c.subresource != "" {
				url += "/" + c.subresource
			}
			method, contentType, body := "", "application/json", []byte(nil)
			switch {
			case c.res.Review != nil:
				method, url, body = http.MethodPost, pathOf(c.res, ""), mustJSON(fixture)
			case c.verb == "create" && c.subresource == "":
				method, url = http.MethodPost, pathOf(c.res, "")
				obj := fixture.DeepCopyObject()
				accessor, _ := meta.Accessor(obj)
				accessor.SetName(name + "-new")
				body = mustJSON(obj)
			case c.verb == "create" && c.subresource == "binding":
				method, body = http.MethodPost, mustJSON(&corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"}, ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "door"}})
			case c.verb == "create" && c.subresource == "token":
				method, body = http.MethodPost, mustJSON(&authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"}})
			case c.verb == "update":
				// The stored object (or its Scale), sent back.
				from := url
				if c.subresource == "finalize" {
					from = pathOf(c.res, name)
				}
				resp, got := send(adminClient, http.MethodGet, from, "", nil)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("get %s: %d %s", url, resp.StatusCode, got)
				}
				method, body = http.MethodPut, got
			case c.verb == "patch":
				method, contentType, body = http.MethodPatch, string(c.patchType), doorPatch(c, fixture, name)
				if c.missing {
					// The whole object: the apply creates it.
					obj := fixture.DeepCopyObject()
					accessor, _ := meta.Accessor(obj)
					accessor.SetName(name)
					body = mustJSON(obj)
				}
				if c.patchType == types.ApplyYAMLPatchType {
					// Forced: another manager owns the replicas.
					url += "?fieldManager=door&force=true"
				}
			case c.verb == "delete":
				method = http.MethodDelete
			case c.verb == "deletecollection":
				method, url = http.MethodDelete, pathOf(c.res, "")+"?labelSelector=door%3Dfixture"
			default:
				t.Fatalf("no request for the route %s: add one", c)
			}
			for _, dryRun := range []bool{false, true} {
				target := url
				if dryRun {
					target += map[bool]string{false: "?", true: "&"}[strings.Contains(url, "?")] + "dryRun=All"
				}
				log.take()
				resp, got := send(refused, method, target, contentType, body)
				if entered := log.take(); !slices.Equal(entered, handlers.Stages()[:len(handlers.Stages())-1]) {
					t.Errorf("%s %s: stages entered %q", method, target, entered)
				}
				var st metav1.Status
				_ = json.Unmarshal(got, &st)
				if resp.StatusCode != http.StatusForbidden || !strings.Contains(st.Message, refusal) {
					t.Fatalf("%s %s: %d %s; want 403 from the refusing admission plugin", method, target, resp.StatusCode, got)
				}
				if !dryRun {
					checkAudit(t, c, ts.auditLog, resp.Header.Get(filters.AuditIDHeader))
				}
			}
		})
	}
}

// checkAudit checks the audit event of a refused write: the request
// object at level Request and above, none below, and Metadata at most for
// the writes that carry credentials.
func checkAudit(t *testing.T, c writeRouteCase, auditLog, id string) {
	t.Helper()
	ev := auditEventByID(t, auditLog, id)
	if audit.AtLeast(ev.Level, auditv1.LevelRequest) && (ev.RequestObject == nil || len(ev.RequestObject.Raw) == 0) {
		t.Errorf("audit event at level %s has no request object", ev.Level)
	}
	if !audit.AtLeast(ev.Level, auditv1.LevelRequest) && ev.RequestObject != nil {
		t.Errorf("audit event at level %s records the request object", ev.Level)
	}
	if (c.res.GVR.Resource == "secrets" || c.subresource == "token" || c.res.GVR.Resource == "tokenreviews") && ev.Level != auditv1.LevelMetadata {
		t.Errorf("audit event of a credential-bearing write at level %s, want Metadata", ev.Level)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// doorPatch is a patch of the route's type that changes the fixture, or
// its Scale, harmlessly.
func doorPatch(c writeRouteCase, fixture runtime.Object, name string) []byte {
	if c.subresource == "scale" {
		switch c.patchType {
		case types.JSONPatchType:
			return []byte(`[{"op":"replace","path":"/spec/replicas","value":2}]`)
		case types.ApplyYAMLPatchType:
			return []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"door"},"spec":{"replicas":2}}`)
		}
		return []byte(`{"spec":{"replicas":2}}`)
	}
	switch c.patchType {
	case types.JSONPatchType:
		return []byte(`[{"op":"add","path":"/metadata/labels/patched","value":"yes"}]`)
	case types.ApplyYAMLPatchType:
		gvk := fixture.GetObjectKind().GroupVersionKind()
		return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"labels":{"patched":"yes"}}}`, gvk.GroupVersion().String(), gvk.Kind, name))
	}
	return []byte(`{"metadata":{"labels":{"patched":"yes"}}}`)
}

// auditEventByID finds the event of one request in the audit log; the
// event is written before the response is sent.
func auditEventByID(t *testing.T, path, id string) auditv1.Event {
	t.Helper()
	for _, ev := range readAuditLog(t, path) {
		if string(ev.AuditID) == id {
			return ev
		}
	}
	t.Fatalf("no audit event %q", id)
	return auditv1.Event{}
}
