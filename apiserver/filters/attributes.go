package filters

import (
	"context"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// isLongRunning reports whether the request streams its response.
func isLongRunning(ctx context.Context) bool {
	info, ok := request.RequestInfoFrom(ctx)
	return ok && info.IsResourceRequest && info.Verb == "watch"
}

// attributesFrom describes the request for the audit policy and the
// authorizer, from the user and request info in ctx.
func attributesFrom(ctx context.Context, r *http.Request) authorizer.Attributes {
	attrs := authorizer.AttributesRecord{Path: r.URL.Path}
	if u, ok := request.UserFrom(ctx); ok {
		attrs.User = u
	} else {
		attrs.User = &user.DefaultInfo{}
	}
	info, ok := request.RequestInfoFrom(ctx)
	if !ok {
		return attrs
	}
	attrs.Verb = info.Verb
	attrs.ResourceRequest = info.IsResourceRequest
	attrs.Path = info.Path
	attrs.APIGroup = info.APIGroup
	attrs.APIVersion = info.APIVersion
	attrs.Resource = info.Resource
	attrs.Subresource = info.Subresource
	attrs.Namespace = info.Namespace
	attrs.Name = info.Name
	return attrs
}
