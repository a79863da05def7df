// Package openapi builds the OpenAPI documents kube-apiserver serves, for
// the resources trustplane serves: the swagger 2.0 document of
// /openapi/v2, and the /openapi/v3 index with one OpenAPI 3.0 document per
// group version (/openapi/v3/api/v1, /openapi/v3/apis/apps/v1, ...).
//
// kube-apiserver builds its documents from definitions generated into
// k8s.io/kubernetes. This package derives the same definitions by
// reflection over the k8s.io/api Go types instead: names from their
// OpenAPIModelName methods, descriptions from their SwaggerDoc methods,
// properties from json tags, x-kubernetes-patch-strategy and
// x-kubernetes-patch-merge-key from patchStrategy and patchMergeKey tags,
// and primitive encodings (metav1.Time, resource.Quantity,
// intstr.IntOrString) from their OpenAPISchemaType methods. The documents
// use kube-openapi's spec types and encoding, so kubectl reads them as it
// reads kube's:
//
//   - apply, create -f, replace -f and edit find the fieldValidation
//     parameter on each kind's PATCH operation, and leave field validation
//     to the server;
//   - apply computes strategic merge patches from the v3 schemas, because
//     PATCH accepts application/strategic-merge-patch+json;
//   - explain finds a kind through x-kubernetes-group-version-kind on the
//     resource's operations and definitions;
//   - the schemas convert to structured-merge-diff types, as server-side
//     apply and client-go's openapi.NewTypeConverter need.
//
// A Builder makes every document once, in New; serving is a map lookup.
// Each document comes with kube's hash of it, the uppercase hex SHA-512 of
// its JSON, which kube-apiserver sends as the ETag and puts in the v3
// index's URLs:
//
//	b, err := openapi.New(resources, "Kubernetes", "v1.32.0")
//	...
//	mux.HandleFunc("GET /openapi/v2", func(w http.ResponseWriter, r *http.Request) {
//		w.Header().Set("Etag", strconv.Quote(b.V2Hash()))
//		w.Header().Set("Content-Type", "application/json")
//		w.Write(b.V2())
//	})
//	mux.HandleFunc("GET /openapi/v3", func(w http.ResponseWriter, r *http.Request) {
//		w.Header().Set("Content-Type", "application/json")
//		w.Write(b.V3Index())
//	})
//	mux.HandleFunc("GET /openapi/v3/{gv...}", func(w http.ResponseWriter, r *http.Request) {
//		doc, _, ok := b.V3(r.PathValue("gv"))
//		if !ok {
//			http.NotFound(w, r)
//			return
//		}
//		w.Header().Set("Content-Type", "application/json")
//		w.Write(doc)
//	})
//
// kubectl asks for /openapi/v2 in protobuf only
// (application/com.github.proto-openapi.spec.v2@v1.0+protobuf), whenever
// it validates a manifest on the client: for a kind no PATCH operation of
// the v3 documents names (the reviews, a List of objects). V2Protobuf is
// that form: V2 parsed into a gnostic openapi_v2.Document, as
// kube-openapi's handler converts it.
package openapi
