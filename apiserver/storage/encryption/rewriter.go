package encryption

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// APIRewriter rewrites objects through the API: a GET, then an UPDATE of
// what it read, held to its resourceVersion. A write that comes between
// them makes the UPDATE a conflict, and the object is read again: a
// concurrent write is never undone.
type APIRewriter struct {
	Client dynamic.Interface
	// Versions maps each resource to the version it is served at.
	Versions map[schema.GroupResource]string
	// MaxConflicts bounds the conflicts of one object; 0 is 20.
	MaxConflicts int
}

var _ Rewriter = APIRewriter{}

// Rewrite writes the object back as it is.
func (a APIRewriter) Rewrite(ctx context.Context, gr schema.GroupResource, namespace, name string) error {
	version, ok := a.Versions[gr]
	if !ok {
		return fmt.Errorf("rewrite %s: not a served resource", gr)
	}
	client := a.Client.Resource(gr.WithVersion(version)).Namespace(namespace)
	what := name
	if namespace != "" {
		what = namespace + "/" + name
	}
	limit := a.MaxConflicts
	if limit <= 0 {
		limit = 20
	}
	for conflicts := 0; ; conflicts++ {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // deleted since the scan: nothing left to protect
		}
		if err != nil {
			return fmt.Errorf("rewrite %s %s: read: %w", gr, what, err)
		}
		_, err = client.Update(ctx, obj, metav1.UpdateOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && conflicts < limit:
			continue
		}
		return fmt.Errorf("rewrite %s %s: %w", gr, what, err)
	}
}
