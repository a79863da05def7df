package openapi

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// route is one URL path and its operations, independent of the OpenAPI
// flavor it is later written in.
type route struct {
	gv     schema.GroupVersion
	path   string
	params []param // shared by every operation of the path
	ops    []operation
}

type operation struct {
	method      string // "get", "put", "post", "patch", "delete"
	id          string
	description string
	action      string
	gvk         schema.GroupVersionKind
	params      []param
	body        *body
	responses   []response
	// stream marks a list or watch: its responses may also be a stream of
	// WatchEvents.
	stream bool
}

// body is a request body: a definition, or for PATCH a meta/v1 Patch in
// one of the four patch media types.
type body struct {
	model    string
	patch    bool
	required bool
}

type response struct {
	code  int
	model string // definition name; "" for a response without a body
}

type param struct {
	name, in, description, typ string
	required                   bool
}

// Definition names of the meta types every resource's operations use.
const (
	statusModel        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	deleteOptionsModel = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	watchEventModel    = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
	patchModel         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
)

// Media types.
const (
	mediaJSON        = "application/json"
	mediaYAML        = "application/yaml"
	mediaProtobuf    = "application/vnd.kubernetes.protobuf"
	mediaWatchSuffix = ";stream=watch"
	mediaAny         = "*/*"
)

// patchMediaTypes are the patch bodies the server accepts. kubectl computes
// a strategic merge patch from the schemas only when the PATCH operation
// lists application/strategic-merge-patch+json.
func patchMediaTypes() []string {
	return []string{
		"application/apply-patch+yaml",
		"application/json-patch+json",
		"application/merge-patch+json",
		"application/strategic-merge-patch+json",
	}
}

func responseMediaTypes(stream bool) []string {
	if stream {
		return []string{mediaJSON, mediaJSON + mediaWatchSuffix, mediaProtobuf, mediaProtobuf + mediaWatchSuffix, mediaYAML}
	}
	return []string{mediaJSON, mediaProtobuf, mediaYAML}
}

// Parameters.
func pathParam(name, description string) param {
	return param{name: name, in: "path", description: description, typ: "string", required: true}
}

func queryParam(name, typ, description string) param {
	return param{name: name, in: "query", description: description, typ: typ}
}

func prettyParam() param {
	return queryParam("pretty", "string", "If 'true', the output is pretty printed.")
}

func namespaceParam() param {
	return pathParam("namespace", "object name and auth scope, such as for teams and projects")
}

func nameParam(kind string) param {
	return pathParam("name", "name of the "+kind)
}

// writeParams are the query parameters of create and update.
func writeParams() []param {
	return []param{
		queryParam("dryRun", "string", "When present, the change is validated but not persisted. The only valid value is All."),
		queryParam("fieldManager", "string", "fieldManager names the actor making the change, for managedFields. At most 128 printable characters."),
		queryParam("fieldValidation", "string", "fieldValidation says what to do with unknown or duplicate fields in the request body: Ignore drops them, Warn drops them and returns a warning for each, Strict rejects the request."),
	}
}

// patchParams are writeParams plus force. kubectl takes the presence of
// fieldValidation on a kind's PATCH operation as the server's promise to
// validate fields, and skips its own validation.
func patchParams() []param {
	return append(writeParams(),
		queryParam("force", "boolean", "force makes an apply request take over fields owned by other managers. It must be unset for other patch types."),
	)
}

// listParams are the query parameters of list; watch adds those that only
// a watch uses.
func listParams(watch bool) []param {
	ps := []param{
		queryParam("continue", "string", "continue is the token from a previous list response's metadata.continue, to fetch the next chunk."),
		queryParam("fieldSelector", "string", "A selector to restrict the returned objects by their fields. Defaults to everything."),
		queryParam("labelSelector", "string", "A selector to restrict the returned objects by their labels. Defaults to everything."),
		queryParam("limit", "integer", "limit is the largest number of objects to return in one response; the server sets metadata.continue if there are more."),
		queryParam("resourceVersion", "string", "resourceVersion sets which version of the data the list is served from; see resourceVersionMatch."),
		queryParam("resourceVersionMatch", "string", "resourceVersionMatch says how resourceVersion applies: Exact or NotOlderThan."),
		queryParam("timeoutSeconds", "integer", "Timeout for the list or watch call, in seconds."),
	}
	if watch {
		ps = append(ps,
			queryParam("allowWatchBookmarks", "boolean", "allowWatchBookmarks asks for BOOKMARK events. Servers may ignore it."),
			queryParam("sendInitialEvents", "boolean", "sendInitialEvents makes a watch start with ADDED events for the existing objects, followed by a bookmark."),
			queryParam("watch", "boolean", "Watch for changes to the described objects and return them as a stream of add, update and remove notifications."),
		)
	}
	return ps
}

// deleteParams are the query parameters of delete.
func deleteParams() []param {
	return []param{
		queryParam("dryRun", "string", "When present, the deletion is validated but not persisted. The only valid value is All."),
		queryParam("gracePeriodSeconds", "integer", "The time in seconds before the object is deleted; 0 deletes at once. Defaults to the kind's own grace period."),
		queryParam("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", "If true, an object that cannot be read from storage is deleted without the usual checks. Dangerous."),
		queryParam("orphanDependents", "boolean", "Deprecated: use propagationPolicy. Whether dependents are orphaned."),
		queryParam("propagationPolicy", "string", "Whether and how garbage collection removes dependents: Orphan, Background or Foreground."),
	}
}

// resourceRoutes are the paths of one resource, its subresources and its
// (deprecated but still published) /watch/ paths.
func resourceRoutes(r *resolved) []route {
	gv := r.GVR.GroupVersion()
	g := opGroupVersion(gv)
	prefix := gvPath(gv)
	kind := r.Kind
	gvk := gv.WithKind(kind)

	ns, nsID, collection, item := "", "", prefix+"/"+r.GVR.Resource, prefix+"/"+r.GVR.Resource+"/{name}"
	scope := []param{}
	if r.Namespaced {
		ns, nsID = "/namespaces/{namespace}", "Namespaced"
		collection = prefix + ns + "/" + r.GVR.Resource
		item = collection + "/{name}"
		scope = []param{namespaceParam()}
	}
	has := r.verbs

	objectResponses := func(codes ...int) []response {
		out := make([]response, 0, len(codes))
		for _, c := range codes {
			out = append(out, response{code: c, model: r.objectModel})
		}
		return out
	}

	var routes []route

	// The collection: list, create, deletecollection.
	coll := route{gv: gv, path: collection, params: append(append([]param{}, scope...), prettyParam())}
	if has["list"] {
		coll.ops = append(coll.ops, operation{
			method: "get", id: "list" + g + nsID + kind, action: "list", gvk: gvk,
			description: "list or watch objects of kind " + kind,
			params:      listParams(has["watch"]),
			responses:   []response{{code: http.StatusOK, model: r.listModel}},
			stream:      has["watch"],
		})
	}
	if has["create"] {
		coll.ops = append(coll.ops, operation{
			method: "post", id: "create" + g + nsID + kind, action: "post", gvk: gvk,
			description: "create " + article(kind) + " " + kind,
			params:      writeParams(),
			body:        &body{model: r.objectModel, required: true},
			responses:   objectResponses(http.StatusOK, http.StatusCreated, http.StatusAccepted),
		})
	}
	if has["deletecollection"] {
		coll.ops = append(coll.ops, operation{
			method: "delete", id: "delete" + g + "Collection" + nsID + kind, action: "deletecollection", gvk: gvk,
			description: "delete collection of " + kind,
			params:      append(deleteParams(), listParams(false)...),
			body:        &body{model: deleteOptionsModel},
			responses:   []response{{code: http.StatusOK, model: statusModel}},
		})
	}
	if len(coll.ops) > 0 {
		routes = append(routes, coll)
	}

	// Across all namespaces, list only.
	if r.Namespaced && has["list"] {
		routes = append(routes, route{gv: gv, path: prefix + "/" + r.GVR.Resource, params: []param{prettyParam()}, ops: []operation{{
			method: "get", id: "list" + g + kind + "ForAllNamespaces", action: "list", gvk: gvk,
			description: "list or watch objects of kind " + kind,
			params:      listParams(has["watch"]),
			responses:   []response{{code: http.StatusOK, model: r.listModel}},
			stream:      has["watch"],
		}}})
	}

	// The item: get, update, patch, delete.
	it := route{gv: gv, path: item, params: append(append([]param{nameParam(kind)}, scope...), prettyParam())}
	if has["get"] {
		it.ops = append(it.ops, operation{
			method: "get", id: "read" + g + nsID + kind, action: "get", gvk: gvk,
			description: "read the specified " + kind,
			responses:   objectResponses(http.StatusOK),
		})
	}
	if has["update"] {
		it.ops = append(it.ops, operation{
			method: "put", id: "replace" + g + nsID + kind, action: "put", gvk: gvk,
			description: "replace the specified " + kind,
			params:      writeParams(),
			body:        &body{model: r.objectModel, required: true},
			responses:   objectResponses(http.StatusOK, http.StatusCreated),
		})
	}
	if has["patch"] {
		it.ops = append(it.ops, operation{
			method: "patch", id: "patch" + g + nsID + kind, action: "patch", gvk: gvk,
			description: "partially update the specified " + kind,
			params:      patchParams(),
			body:        &body{model: patchModel, patch: true, required: true},
			responses:   objectResponses(http.StatusOK, http.StatusCreated),
		})
	}
	if has["delete"] {
		it.ops = append(it.ops, operation{
			method: "delete", id: "delete" + g + nsID + kind, action: "delete", gvk: gvk,
			description: "delete " + article(kind) + " " + kind,
			params:      deleteParams(),
			body:        &body{model: deleteOptionsModel},
			responses:   []response{{code: http.StatusOK, model: statusModel}, {code: http.StatusAccepted, model: statusModel}},
		})
	}
	if len(it.ops) > 0 {
		routes = append(routes, it)
	}

	for _, sub := range r.subresources {
		if rt, ok := subresourceRoute(gv, item, nsID, kind, sub, scope); ok {
			routes = append(routes, rt)
		}
	}

	if has["watch"] {
		watchEvent := []response{{code: http.StatusOK, model: watchEventModel}}
		watchPrefix := prefix + "/watch"
		routes = append(routes,
			route{gv: gv, path: watchPrefix + ns + "/" + r.GVR.Resource + "/{name}",
				params: append(append([]param{nameParam(kind)}, scope...), prettyParam()),
				ops: []operation{{
					method: "get", id: "watch" + g + nsID + kind, action: "watch", gvk: gvk,
					description: "watch changes to an object of kind " + kind + ". Deprecated: use the 'watch' parameter with a list operation, filtered to one item with the 'fieldSelector' parameter.",
					params:      listParams(true), responses: watchEvent, stream: true,
				}}},
			route{gv: gv, path: watchPrefix + ns + "/" + r.GVR.Resource,
				params: append(append([]param{}, scope...), prettyParam()),
				ops: []operation{{
					method: "get", id: "watch" + g + nsID + kind + "List", action: "watchlist", gvk: gvk,
					description: "watch individual changes to a list of " + kind + ". Deprecated: use the 'watch' parameter with a list operation instead.",
					params:      listParams(true), responses: watchEvent, stream: true,
				}}},
		)
		if r.Namespaced {
			routes = append(routes, route{gv: gv, path: watchPrefix + "/" + r.GVR.Resource,
				params: []param{prettyParam()},
				ops: []operation{{
					method: "get", id: "watch" + g + kind + "ListForAllNamespaces", action: "watchlist", gvk: gvk,
					description: "watch individual changes to a list of " + kind + ". Deprecated: use the 'watch' parameter with a list operation instead.",
					params:      listParams(true), responses: watchEvent, stream: true,
				}}})
		}
	}
	return routes
}

func subresourceRoute(gv schema.GroupVersion, item, nsID, kind string, sub resolvedSub, scope []param) (route, bool) {
	g := opGroupVersion(gv)
	suffix := upperFirst(sub.Name)
	id := g + nsID + kind + suffix
	what := sub.Name + " of the specified " + kind
	rt := route{gv: gv, path: item + "/" + sub.Name, params: append(append([]param{nameParam(sub.gvk.Kind)}, scope...), prettyParam())}
	model := func(codes ...int) []response {
		out := make([]response, 0, len(codes))
		for _, c := range codes {
			out = append(out, response{code: c, model: sub.model})
		}
		return out
	}
	for _, v := range sub.Verbs {
		switch v {
		case "get":
			rt.ops = append(rt.ops, operation{method: "get", id: "read" + id, action: "get", gvk: sub.gvk,
				description: "read " + what, responses: model(http.StatusOK)})
		case "update":
			rt.ops = append(rt.ops, operation{method: "put", id: "replace" + id, action: "put", gvk: sub.gvk,
				description: "replace " + what, params: writeParams(),
				body: &body{model: sub.model, required: true}, responses: model(http.StatusOK, http.StatusCreated)})
		case "patch":
			rt.ops = append(rt.ops, operation{method: "patch", id: "patch" + id, action: "patch", gvk: sub.gvk,
				description: "partially update " + what, params: patchParams(),
				body: &body{model: patchModel, patch: true, required: true}, responses: model(http.StatusOK, http.StatusCreated)})
		case "create":
			rt.ops = append(rt.ops, operation{method: "post", id: "create" + id, action: "post", gvk: sub.gvk,
				description: "create " + sub.Name + " of " + article(kind) + " " + kind, params: writeParams(),
				body: &body{model: sub.model, required: true}, responses: model(http.StatusOK, http.StatusCreated, http.StatusAccepted)})
		}
	}
	return rt, len(rt.ops) > 0
}

func article(word string) string {
	if word != "" && strings.ContainsRune("AEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
