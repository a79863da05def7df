// Package handlers serves the resource requests that passed the filters:
// get, list and watch, and every write (create, update, every patch type,
// delete, deletecollection, and the status, scale, binding, token and
// finalize subresources, and the reviews) down the one write path of
// write.go. A request is served over its scope: the resource, namespace,
// name and subresource it names.
package handlers
