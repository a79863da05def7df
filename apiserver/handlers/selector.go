package handlers

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/responses"
)

// selector filters objects by label and field.
type selector struct {
	res    *registry.Resource
	labels labels.Selector
	fields fields.Selector
}

func parseSelector(q *scope, r *http.Request) (*selector, error) {
	query := r.URL.Query()
	ls, err := labels.Parse(query.Get("labelSelector"))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid labelSelector: %v", err))
	}
	fs, err := fields.ParseSelector(query.Get("fieldSelector"))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid fieldSelector: %v", err))
	}
	supported := q.res.FieldLabels()
	metadataOnly := responses.MetadataOnly(r.Context())
	for _, req := range fs.Requirements() {
		if !supported[req.Field] {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
		if metadataOnly && !metadataFields[req.Field] {
			// The objects selected, or not, would tell the field's
			// value (a Secret's type) to a grant that shows none.
			return nil, apierrors.NewForbidden(q.res.GroupResource(), "", fmt.Errorf("a grant on %s/%s may select by metadata.name and metadata.namespace only, not by %s, which it does not show", q.res.GroupResource().Resource, responses.MetadataSubresource, req.Field))
		}
	}
	return &selector{res: q.res, labels: ls, fields: fs}, nil
}

// metadataFields are the field labels that read only an object's
// metadata: all a request allowed by a metadata grant may select by.
var metadataFields = map[string]bool{"metadata.name": true, "metadata.namespace": true}

func (s *selector) everything() bool { return s.labels.Empty() && s.fields.Empty() }

func (s *selector) matches(obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	if s.everything() {
		return true
	}
	accessor, err := meta.Accessor(obj)
	if err != nil || !s.labels.Matches(labels.Set(accessor.GetLabels())) {
		return false
	}
	set, err := s.res.ObjectFields(obj)
	return err == nil && s.fields.Matches(set)
}
