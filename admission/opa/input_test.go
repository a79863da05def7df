package opa

import (
	"bytes"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Input reads objects from their JSON straight into AST values; it must
// give what converting them to unstructured maps, then to AST values,
// gives (the way it was built before, kept here as the reference).
func TestInputAsUnstructured(t *testing.T) {
	now := metav1.Now()
	one := int32(1)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "s", Namespace: "team", UID: "u-1", CreationTimestamp: now, Generation: 3,
			Labels:        map[string]string{"app": "a<b>&c", "ünï": "cödé"},
			Annotations:   map[string]string{"last-applied": `{"a":"b\n\t\"q\"","e":"\u2028 😀"}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: "Update", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:pw":{}}}`)}}},
		},
		Immutable:  new(bool),
		Data:       map[string][]byte{"pw": []byte("hunter2"), "bin": {0, 0xff, '"', '\\'}, "empty": {}},
		StringData: map[string]string{"s": "line\nline \x01 é"},
		Type:       corev1.SecretTypeOpaque,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", DeletionGracePeriodSeconds: new(int64)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "c", Image: "i",
				Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}, PeriodSeconds: 10},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
				Env:            []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}}},
			}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}},
		},
	}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "team"}, Spec: appsv1.DeploymentSpec{Replicas: &one, Template: corev1.PodTemplateSpec{Spec: pod.Spec}}}
	custom := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "team"},
		"spec":     map[string]any{"ratio": 0.25, "big": 1e21, "count": int64(-7), "on": true, "none": nil, "list": []any{"a", int64(1), 2.5, []any{}}, "empty": map[string]any{}},
	}}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "bearer", Audiences: []string{"a"}}}
	bob := &user.DefaultInfo{Name: "bob", UID: "b-1", Groups: []string{"g1", "g2"}, Extra: map[string][]string{"scopes": {"x", "y"}, "empty": {}}}

	for name, a := range map[string]admission.Attributes{
		"secret create": admission.NewAttributesRecord(secret, nil, corev1.SchemeGroupVersion.WithKind("Secret"), "team", "s", corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Create, &metav1.CreateOptions{FieldManager: "kubectl"}, false, bob),
		"secret update": admission.NewAttributesRecord(secret, secret.DeepCopy(), corev1.SchemeGroupVersion.WithKind("Secret"), "team", "s", corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Update, &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}}, true, bob),
		"pod delete":    admission.NewAttributesRecord(nil, pod, corev1.SchemeGroupVersion.WithKind("Pod"), "team", "p", corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Delete, &metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, false, &user.DefaultInfo{Name: "alice"}),
		"pod status":    admission.NewAttributesRecord(pod, pod, corev1.SchemeGroupVersion.WithKind("Pod"), "team", "p", corev1.SchemeGroupVersion.WithResource("pods"), "status", admission.Update, nil, false, nil),
		"deployment":    admission.NewAttributesRecord(deployment, nil, appsv1.SchemeGroupVersion.WithKind("Deployment"), "team", "d", appsv1.SchemeGroupVersion.WithResource("deployments"), "", admission.Create, &metav1.CreateOptions{}, false, bob),
		"custom":        admission.NewAttributesRecord(custom, nil, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, "team", "w", schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "", admission.Create, &metav1.CreateOptions{}, false, bob),
		"token review":  admission.NewAttributesRecord(review, nil, authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), "", "", authenticationv1.SchemeGroupVersion.WithResource("tokenreviews"), "", admission.Create, &metav1.CreateOptions{}, false, bob),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Input(a)
			if err != nil {
				t.Fatal(err)
			}
			want, err := inputViaUnstructured(a)
			if err != nil {
				t.Fatal(err)
			}
			// The uid is new for each input.
			uid := ast.Ref{ast.StringTerm("request"), ast.StringTerm("uid")}
			u, err := got.Find(uid)
			if err != nil {
				t.Fatal(err)
			}
			want.(ast.Object).Get(ast.StringTerm("request")).Value.(ast.Object).Insert(ast.StringTerm("uid"), ast.NewTerm(u))
			if got.Compare(want) != 0 {
				t.Errorf("input\n%v\nwant\n%v", got, want)
			}
		})
	}
	if review.Spec.Token != "bearer" {
		t.Error("the request's own TokenReview was changed")
	}
}

// inputViaUnstructured is Input as it was built before: each object
// converted to an unstructured map, then the whole review to an AST value.
func inputViaUnstructured(a admission.Attributes) (ast.Value, error) {
	kind, res := a.GetKind(), a.GetResource()
	gvk := func(k schema.GroupVersionKind) map[string]any {
		return map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind}
	}
	gvr := func(r schema.GroupVersionResource) map[string]any {
		return map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource}
	}
	toAny := func(s []string) []any {
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = v
		}
		return out
	}
	req := map[string]any{
		"uid": "", "kind": gvk(kind), "resource": gvr(res), "requestKind": gvk(kind), "requestResource": gvr(res),
		"name": a.GetName(), "namespace": a.GetNamespace(), "operation": string(a.GetOperation()), "dryRun": a.IsDryRun(),
	}
	if sub := a.GetSubresource(); sub != "" {
		req["subResource"] = sub
	}
	if u := a.GetUserInfo(); u != nil {
		info := map[string]any{"username": u.GetName()}
		if uid := u.GetUID(); uid != "" {
			info["uid"] = uid
		}
		if groups := u.GetGroups(); len(groups) > 0 {
			info["groups"] = toAny(groups)
		}
		if extra := u.GetExtra(); len(extra) > 0 {
			m := map[string]any{}
			for k, v := range extra {
				m[k] = toAny(v)
			}
			info["extra"] = m
		}
		req["userInfo"] = info
	}
	for key, obj := range map[string]runtime.Object{"object": a.GetObject(), "oldObject": a.GetOldObject(), "options": a.GetOperationOptions()} {
		if obj == nil {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		if key != "options" {
			m["apiVersion"], m["kind"] = kind.GroupVersion().String(), kind.Kind
			if res.Group == "authentication.k8s.io" && res.Resource == "tokenreviews" {
				if spec, ok := m["spec"].(map[string]any); ok {
					delete(spec, "token")
				}
			}
		} else if gvks := obj.GetObjectKind().GroupVersionKind(); !gvks.Empty() {
			m["apiVersion"], m["kind"] = gvks.GroupVersion().String(), gvks.Kind
		}
		req[key] = m
	}
	return ast.InterfaceToValue(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

// jsonValue reads what OPA's own JSON reading reads, and refuses what is
// not JSON.
func TestJSONValue(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, `""`, `null`, `true`, `false`, `0`, `-0`, `1.5E+3`, `1e400`, `-12.25e-2`, `123456789012345678901234567890`,
		` { "a" : [ 1 , "x" , null , true , { } , [ ] ] , "b" : { "c" : false } } `,
		`{"esc":"\"\\\/\b\f\n\r\t\u0041\u00e9\ud83d\ude00\u2028","html":"\u003c\u003e\u0026","raw":"é😀"}`,
		`{"dup":1,"dup":2}`,
	} {
		got, err := jsonValue([]byte(doc), allFields)
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		want, err := ast.ValueFromReader(bytes.NewReader([]byte(doc)))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if got.Compare(want) != 0 {
			t.Errorf("%s: got %v, want %v", doc, got, want)
		}
	}
	for _, doc := range []string{
		``, ` `, `{`, `[`, `"`, `"abc`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{1:2}`, `{"a":1}x`, `tru`, `nul`, `-`, `1.`, `01`, `1e`, `+1`,
		"\"a\nb\"", `"\x"`, `"\u12"`, `{"a":1}{}`,
	} {
		if v, err := jsonValue([]byte(doc), allFields); err == nil {
			t.Errorf("%q: got %v, want an error", doc, v)
		}
	}
}

// A request's userInfo is the user who made it, whatever users came
// before: the shared term of a user is used only for that user, even
// where another user's key finds it, and users told apart only by extra
// get terms of their own.
func TestUserInfoIsTheRequestsUser(t *testing.T) {
	want := func(u user.Info) *ast.Term {
		t.Helper()
		m := map[string]any{"username": u.GetName()}
		if u.GetUID() != "" {
			m["uid"] = u.GetUID()
		}
		if len(u.GetGroups()) > 0 {
			m["groups"] = u.GetGroups()
		}
		if len(u.GetExtra()) > 0 {
			m["extra"] = u.GetExtra()
		}
		v, err := ast.InterfaceToValue(m)
		if err != nil {
			t.Fatal(err)
		}
		return ast.NewTerm(v)
	}
	alice := &user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"team"}}
	aliceAdmin := &user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"team", "admins"}}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"team"}}
	pod := &user.DefaultInfo{Name: "system:serviceaccount:team:app", Groups: []string{"system:serviceaccounts"}, Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"app-1"}}}
	for _, u := range []user.Info{alice, aliceAdmin, bob, pod, alice, aliceAdmin, pod, bob} {
		if got := userInfo(u); !got.Equal(want(u)) {
			t.Errorf("userInfo of %s %v: %v", u.GetName(), u.GetGroups(), got)
		}
	}
	if userInfo(alice) != userInfo(&user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"team"}}) {
		t.Error("a user's term is not shared")
	}
	if userInfo(pod) != userInfo(pod) {
		t.Error("a user with extra does not share a term")
	}
	// Extra tells users apart: another pod of the ServiceAccount, or the
	// same extra under another key.
	otherPod := &user.DefaultInfo{Name: pod.Name, Groups: pod.Groups, Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"app-2"}}}
	otherKey := &user.DefaultInfo{Name: pod.Name, Groups: pod.Groups, Extra: map[string][]string{"authentication.kubernetes.io/node-name": {"app-1"}}}
	for _, u := range []user.Info{otherPod, otherKey, pod} {
		if got := userInfo(u); !got.Equal(want(u)) {
			t.Errorf("userInfo of %s %v: %v", u.GetName(), u.GetExtra(), got)
		}
	}

	// bob's key finds alice's term.
	bobKey := userKey("bob", "", []string{"team"}, nil)
	t.Cleanup(func() {
		userTerms.mu.Lock()
		delete(userTerms.m, bobKey)
		userTerms.mu.Unlock()
	})
	userTerms.mu.Lock()
	userTerms.m[bobKey] = userTerms.m[userKey("alice", "1", []string{"team"}, nil)]
	userTerms.mu.Unlock()
	if got := userInfo(bob); !got.Equal(want(bob)) {
		t.Errorf("userInfo of bob, whose hash finds alice's term: %v", got)
	}
}

// Once userTerms is full, new users' terms are still kept: one of the
// others goes.
func TestUserTermsFull(t *testing.T) {
	t.Cleanup(func() {
		userTerms.mu.Lock()
		clear(userTerms.m)
		userTerms.mu.Unlock()
	})
	for i := range maxUserTerms + 10 {
		userInfo(&user.DefaultInfo{Name: fmt.Sprintf("user-%d", i)})
	}
	userTerms.mu.RLock()
	n := len(userTerms.m)
	userTerms.mu.RUnlock()
	if n > maxUserTerms {
		t.Errorf("%d users' terms kept, more than %d", n, maxUserTerms)
	}
	last := &user.DefaultInfo{Name: fmt.Sprintf("user-%d", maxUserTerms+9)}
	if userInfo(last) != userInfo(last) {
		t.Error("a new user's term is not kept once the cache is full")
	}
}
