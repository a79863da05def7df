package filters

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/trustplane/trustplane/apiserver/responses"
)

// NewRequestInfoResolver parses requests as kube-apiserver does, with /api
// and /apis as the prefixes of resource requests.
func NewRequestInfoResolver() *request.RequestInfoFactory {
	return &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
}

// WithRequestInfo parses what the request is about (verb, resource,
// namespace, name) with k8s.io/apiserver's parser and puts it in the
// context.
func WithRequestInfo(next http.Handler, resolver request.RequestInfoResolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := resolver.NewRequestInfo(r)
		if err != nil {
			st := apierrors.NewBadRequest(fmt.Sprintf("unable to parse the request: %v", err)).Status()
			responses.WriteStatus(w, &st)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithRequestInfo(r.Context(), info)))
	})
}
