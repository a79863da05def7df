// Package patch applies the four PATCH content types of the Kubernetes API
// — JSON patch (RFC 6902), JSON merge patch (RFC 7386), strategic merge
// patch and server-side apply — to typed objects, and keeps
// metadata.managedFields on every write, as kube-apiserver's patch handler
// and field manager do (k8s.io/apiserver/pkg/endpoints/handlers/patch.go).
//
// A Manager serves one kind. Build one type converter for the whole scheme
// and one Manager per kind at start-up; both are safe for concurrent use.
// The PATCH handler passes the stored object, or nil, and stores what
// Patch returns, sending its warnings as Warning headers; POST and PUT
// handlers record their writes with Update. See ExampleManager_Patch.
//
// Every error is an API error (k8s.io/apimachinery/pkg/api/errors), never
// a 5xx for anything a client can send:
//
//   - 400 for a body that is not what its content type says, a patch that
//     changes apiVersion, kind, name or namespace, an apply patch of another
//     kind or one that does not fit the kind's schema, and, under
//     fieldValidation=Strict, an apply patch with duplicate keys;
//   - 404 when a patch other than apply has nothing to patch;
//   - 409 for server-side apply conflicts (causes of type
//     FieldManagerConflict) and for an apply that creates with a uid;
//   - 413 for a JSON patch of more than 10,000 operations;
//   - 415 for an unknown content type;
//   - 422 for a JSON patch operation that fails, a result that is not a
//     valid object of the kind, a bad fieldManager, force or
//     fieldValidation parameter, and, under fieldValidation=Strict, a JSON,
//     merge or strategic merge patch with unknown fields or duplicate keys.
//
// Preconditions (resourceVersion, uid), admission, validation and storage
// are the caller's.
//
// Two departures from the libraries kube-apiserver calls, both for hostile
// bodies. JSON merge patches are applied by mergePatch, which gives the
// results of jsonpatch.MergePatch in linear time instead of time
// proportional to depth times size. And the first NewManager caps, process
// wide, the bytes a JSON patch's "copy" operations may duplicate:
// gopkg.in/evanphx/json-patch.v4 keeps that limit in a package variable,
// AccumulatedCopySizeLimit, unlimited by default; NewManager only ever
// lowers it, as kube-apiserver does at start-up.
package patch
