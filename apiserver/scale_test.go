package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1apply "k8s.io/client-go/applyconfigurations/apps/v1"
	autoscalingv1apply "k8s.io/client-go/applyconfigurations/autoscaling/v1"
)

// Server-side apply of a Scale, as kubectl apply --server-side
// --subresource=scale sends it, and the managed fields of spec.replicas as
// kube-apiserver keeps them on the object across writes of the object and
// of its scale: whoever owns the replicas, through either, is who an apply
// conflicts with.
func TestScaleServerSideApply(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	c := ts.httpClient(t, admin)
	ctx := testContext(t)
	deps := cs.AppsV1().Deployments("default")
	created, err := deps.Create(ctx, testDeployment("web"), metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	scaleURL := ts.url + "/apis/apps/v1/namespaces/default/deployments/web/scale"
	applied := func(replicas int) string {
		return fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":%d}}`, replicas)
	}
	const (
		apply = string(types.ApplyPatchType)
		merge = string(types.MergePatchType)
	)
	steps := []struct {
		name, method, contentType, query, body string
		code                                   int
		message                                string // of a refusal
		replicas                               int32  // the deployment's after the step
		owners                                 []string
	}{
		{name: "apply by a manager that does not own replicas", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: applied(3),
			code: 409, message: `Apply failed with 1 conflict: conflict with "creator" using autoscaling/v1: .spec.replicas`,
			replicas: 1, owners: []string{"creator/Update/"}},
		{name: "dry run of a forced apply", method: "PATCH", contentType: apply, query: "?fieldManager=scaler&force=true&dryRun=All", body: applied(3),
			code: 200, replicas: 1, owners: []string{"creator/Update/"}},
		{name: "forced apply", method: "PATCH", contentType: apply, query: "?fieldManager=scaler&force=true", body: applied(3),
			code: 200, replicas: 3, owners: []string{"scaler/Apply/scale"}},
		{name: "apply by the owner", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: applied(4),
			code: 200, replicas: 4, owners: []string{"scaler/Apply/scale"}},
		{name: "apply as YAML", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
			code: 200, replicas: 5, owners: []string{"scaler/Apply/scale"}},
		{name: "kubectl scale takes it over", method: "PATCH", contentType: merge, query: "?fieldManager=kubectl-scale", body: `{"spec":{"replicas":6}}`,
			code: 200, replicas: 6, owners: []string{"kubectl-scale/Update/scale"}},
		{name: "apply after kubectl scale", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: applied(7),
			code: 409, message: `Apply failed with 1 conflict: conflict with "kubectl-scale" with subresource "scale" using autoscaling/v1: .spec.replicas`,
			replicas: 6, owners: []string{"kubectl-scale/Update/scale"}},
		{name: "PUT of a Scale", method: "PUT", contentType: "application/json", query: "?fieldManager=putter", body: applied(8),
			code: 200, replicas: 8, owners: []string{"putter/Update/scale"}},
		{name: "forced apply again", method: "PATCH", contentType: apply, query: "?fieldManager=scaler&force=true", body: applied(2),
			code: 200, replicas: 2, owners: []string{"scaler/Apply/scale"}},

		{name: "apply without a field manager", method: "PATCH", contentType: apply, body: applied(9),
			code: 422, message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
			replicas: 2, owners: []string{"scaler/Apply/scale"}},
		{name: "apply of another kind", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":9}}`,
			code: 400, message: `the apply patch has apiVersion "apps/v1" and kind "Deployment", expected "autoscaling/v1" and "Scale"`,
			replicas: 2, owners: []string{"scaler/Apply/scale"}},
		{name: "apply of another name", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"db"},"spec":{"replicas":9}}`,
			code: 400, message: `the name of the object (db) does not match the name on the URL (web)`,
			replicas: 2, owners: []string{"scaler/Apply/scale"}},
		{name: "apply of a field a Scale lacks", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":9,"bogus":1}}`,
			code: 400, message: "the apply patch is not a valid Scale: .spec.bogus: field not declared in schema",
			replicas: 2, owners: []string{"scaler/Apply/scale"}},
		{name: "apply of negative replicas", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: applied(-1),
			code: 422, message: `Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`,
			replicas: 2, owners: []string{"scaler/Apply/scale"}},
		{name: "apply with a stale resourceVersion", method: "PATCH", contentType: apply, query: "?fieldManager=scaler", body: fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","resourceVersion":%q},"spec":{"replicas":9}}`, created.ResourceVersion),
			code: 409, message: `Operation cannot be fulfilled on deployments.apps "web": ` + "the object has been modified; please apply your changes to the latest version and try again",
			replicas: 2, owners: []string{"scaler/Apply/scale"}},
		{name: "PUT with another uid", method: "PUT", contentType: "application/json", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","uid":"6c3b5a8e-0000-4000-8000-000000000000"},"spec":{"replicas":9}}`,
			code: 409, message: fmt.Sprintf(`Operation cannot be fulfilled on deployments/scale.apps "web": Precondition failed: UID in precondition: 6c3b5a8e-0000-4000-8000-000000000000, UID in object meta: %s`, created.UID),
			replicas: 2, owners: []string{"scaler/Apply/scale"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			resp := do(t, c, st.method, scaleURL+st.query, st.contentType, st.body)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != st.code {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, st.code)
			}
			if st.code == http.StatusOK {
				var scale autoscalingv1.Scale
				if err := json.Unmarshal(body, &scale); err != nil || scale.Kind != "Scale" || len(scale.ManagedFields) != 0 {
					t.Errorf("answer %s, want a Scale without managed fields, as kube's", body)
				}
			} else {
				var status metav1.Status
				if err := json.Unmarshal(body, &status); err != nil || status.Message != st.message {
					t.Errorf("refusal %s\nwant message %q", body, st.message)
				}
			}
			d, err := deps.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != st.replicas {
				t.Errorf("%d replicas, want %d", *d.Spec.Replicas, st.replicas)
			}
			if got := replicasOwners(t, d.ManagedFields); !slices.Equal(got, st.owners) {
				t.Errorf("spec.replicas owned by %v, want %v\nmanaged fields: %s", got, st.owners, managedFieldsString(d.ManagedFields))
			}
		})
	}

	// The owner through the scale is the owner of the object's field: an
	// apply of the deployment conflicts with it, until forced.
	dep := appsv1apply.Deployment("web", "default").WithSpec(appsv1apply.DeploymentSpec().WithReplicas(5))
	_, err = deps.Apply(ctx, dep, metav1.ApplyOptions{FieldManager: "creator"})
	if want := `Apply failed with 1 conflict: conflict with "scaler" with subresource "scale": .spec.replicas`; !apierrors.IsConflict(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("apply of the deployment's replicas: %v, want a conflict %q", err, want)
	}
	d, err := deps.Apply(ctx, dep, metav1.ApplyOptions{FieldManager: "creator", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := replicasOwners(t, d.ManagedFields); *d.Spec.Replicas != 5 || !slices.Equal(got, []string{"creator/Apply/"}) {
		t.Errorf("after a forced apply of the deployment: %d replicas owned by %v, want 5 by creator/Apply/", *d.Spec.Replicas, got)
	}

	// client-go's ApplyScale, on a ReplicaSet.
	rss := cs.AppsV1().ReplicaSets("default")
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}, Spec: appsv1.ReplicaSetSpec{Selector: testDeployment("rs").Spec.Selector, Template: testDeployment("rs").Spec.Template}}
	if _, err := rss.Create(ctx, rs, metav1.CreateOptions{FieldManager: "creator"}); err != nil {
		t.Fatal(err)
	}
	scale := autoscalingv1apply.Scale().WithSpec(autoscalingv1apply.ScaleSpec().WithReplicas(4))
	if _, err := rss.ApplyScale(ctx, "rs", scale, metav1.ApplyOptions{FieldManager: "hpa"}); !apierrors.IsConflict(err) {
		t.Errorf("ApplyScale of replicas creator owns: %v, want a conflict", err)
	}
	got, err := rss.ApplyScale(ctx, "rs", scale, metav1.ApplyOptions{FieldManager: "hpa", Force: true})
	if err != nil || got.Spec.Replicas != 4 {
		t.Fatalf("forced ApplyScale: %v %v, want 4 replicas", got, err)
	}
	stored, err := rss.Get(ctx, "rs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owners := replicasOwners(t, stored.ManagedFields); *stored.Spec.Replicas != 4 || !slices.Equal(owners, []string{"hpa/Apply/scale"}) {
		t.Errorf("replicaset after ApplyScale: %d replicas owned by %v, want 4 by hpa/Apply/scale", *stored.Spec.Replicas, owners)
	}
}

// replicasOwners lists the managers, as manager/operation/subresource,
// whose entries own spec.replicas, checking that each is recorded in
// apps/v1, the object's version.
func replicasOwners(t *testing.T, entries []metav1.ManagedFieldsEntry) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		if e.FieldsV1 == nil {
			continue
		}
		var set struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &set); err != nil {
			t.Fatalf("managed fields of %s: %v", e.Manager, err)
		}
		if _, ok := set.Spec["f:replicas"]; ok {
			if e.APIVersion != "apps/v1" {
				t.Errorf("%s's entry is in %s, want apps/v1", e.Manager, e.APIVersion)
			}
			out = append(out, fmt.Sprintf("%s/%s/%s", e.Manager, e.Operation, e.Subresource))
		}
	}
	return out
}

func managedFieldsString(entries []metav1.ManagedFieldsEntry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "\n  %s %s %s %q: %s", e.Manager, e.Operation, e.APIVersion, e.Subresource, e.FieldsV1.Raw)
	}
	return b.String()
}
