package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestForKind(t *testing.T) {
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want schema.GroupVersionResource // zero: none
	}{
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, want: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}},
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, want: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Event"}, want: schema.GroupVersionResource{Version: "v1", Resource: "events"}},
		{gvk: schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "Event"}, want: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Binding"}},
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}},
		{gvk: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}},
	} {
		res, ok := reg.ForKind(tc.gvk)
		switch {
		case tc.want.Empty() && ok:
			t.Errorf("ForKind(%s) = %s, want none", tc.gvk, res.GVR)
		case !tc.want.Empty() && (!ok || res.GVR != tc.want):
			t.Errorf("ForKind(%s) = %v, %v, want %s", tc.gvk, res, ok, tc.want)
		}
	}
}
