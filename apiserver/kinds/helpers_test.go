package kinds

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// errKeys renders each error as "path: type", sorted, so a test states
// exactly which errors it expects and notices any extra one.
func errKeys(errs field.ErrorList) []string {
	keys := make([]string, 0, len(errs))
	for _, e := range errs {
		keys = append(keys, fmt.Sprintf("%s: %s", e.Field, e.Type))
	}
	slices.Sort(keys)
	return keys
}

// checkErrs compares errors by path and type. want uses the same
// "path: type" form, e.g. "spec.containers: Required value".
func checkErrs(t *testing.T, got field.ErrorList, want ...string) {
	t.Helper()
	slices.Sort(want)
	if want == nil {
		want = []string{}
	}
	if g := errKeys(got); !slices.Equal(g, want) {
		t.Errorf("errors:\n got %q\nwant %q\nfull: %v", g, want, got.ToAggregate())
	}
}

// checkDetail asserts that some error at path has a detail starting with
// prefix: the message a client prints.
func checkDetail(t *testing.T, errs field.ErrorList, path, prefix string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == path && strings.HasPrefix(e.Detail, prefix) {
			return
		}
	}
	t.Errorf("no error at %s with detail %q; got %v", path, prefix, errs.ToAggregate())
}

// fromYAML decodes a manifest the way it would come off the wire.
func fromYAML[T any](t *testing.T, doc string) *T {
	t.Helper()
	var v T
	if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
		t.Fatalf("decode test manifest: %v", err)
	}
	return &v
}

// Type strings for want lists.
const (
	required     = "Required value"
	invalid      = "Invalid value"
	forbidden    = "Forbidden"
	notSupported = "Unsupported value"
	duplicate    = "Duplicate value"
	notFound     = "Not found"
)

func e(path, typ string) string { return path + ": " + typ }
