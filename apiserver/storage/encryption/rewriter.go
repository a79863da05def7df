package encryption

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// ErrChanged is a rewrite refused because the object is no longer at the
// revision it was read at: someone wrote it since. The caller reads it
// again and decides.
var ErrChanged = errors.New("the object changed since it was read")

// APIRewriter rewrites objects through the API with one request each: a
// merge patch that changes nothing and holds the resourceVersion the
// object was scanned at, as kube's storage version migrator does. The
// API server reads the object, writes it back under its write key, and
// refuses with a conflict if it changed since the scan: a concurrent
// write is never undone. No body travels to the API server, and no LIST
// is needed: the scan of etcd gives each object's revision. The client is
// a metadata client: the answer is the object's metadata in protobuf, not
// the object, cheaper to encode and decode, and a grant on metadata alone
// (secrets/metadata) is enough to rotate Secrets.
type APIRewriter struct {
	Client metadata.Interface
	// Versions maps each resource to the version it is served at.
	Versions map[schema.GroupResource]string
}

var _ Rewriter = APIRewriter{}

// Rewrite writes the object back as it is if it is still at revision rev.
// It returns ErrChanged if it is not; an object gone is no error.
func (a APIRewriter) Rewrite(ctx context.Context, gr schema.GroupResource, namespace, name string, rev int64) error {
	version, ok := a.Versions[gr]
	if !ok {
		return fmt.Errorf("rewrite %s: not a served resource", gr)
	}
	patch := []byte(`{"metadata":{"resourceVersion":"` + strconv.FormatInt(rev, 10) + `"}}`)
	_, err := a.Client.Resource(gr.WithVersion(version)).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return ErrChanged
	}
	what := name
	if namespace != "" {
		what = namespace + "/" + name
	}
	return fmt.Errorf("rewrite %s %s: %w", gr, what, err)
}
