package patch_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/patch"
)

// A server builds the type converter and one Manager per kind at start-up,
// then calls Apply from its PATCH handler with the stored object.
func ExampleManager_Patch() {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	configMaps, err := patch.NewManager(scheme, patch.NewTypeConverter(scheme),
		corev1.SchemeGroupVersion.WithKind("ConfigMap"), func() runtime.Object { return &corev1.ConfigMap{} })
	if err != nil {
		panic(err)
	}

	// kubectl apply --server-side on a missing object creates it.
	manifest := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"blue"}}`
	obj, _, err := configMaps.Patch(nil, patch.Request{ContentType: "application/apply-patch+yaml", Body: []byte(manifest), FieldManager: "kubectl"})
	if err != nil {
		panic(err)
	}
	// kubectl label settings team=web
	obj, _, err = configMaps.Patch(obj, patch.Request{ContentType: "application/merge-patch+json", Body: []byte(`{"metadata":{"labels":{"team":"web"}}}`),
		FieldManager: "kubectl-label", UserAgent: "kubectl/v1.32.5 (linux/amd64) kubernetes/9894294"})
	if err != nil {
		panic(err)
	}
	cm := obj.(*corev1.ConfigMap)
	fmt.Println(cm.Data, cm.Labels)
	for _, e := range cm.ManagedFields {
		fmt.Println(e.Manager, e.Operation)
	}

	// Another manager changing kubectl's field is a conflict.
	_, _, err = configMaps.Patch(cm, patch.Request{ContentType: "application/apply-patch+yaml",
		Body: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"red"}}`), FieldManager: "helm"})
	fmt.Println(apierrors.IsConflict(err), err)
	// Output:
	// map[color:blue] map[team:web]
	// kubectl Apply
	// kubectl-label Update
	// true Apply failed with 1 conflict: conflict with "kubectl": .data.color
}
