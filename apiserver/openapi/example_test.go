package openapi_test

import (
	"encoding/json"
	"fmt"
	"log"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/trustplane/trustplane/apiserver/openapi"
)

func Example() {
	b, err := openapi.New([]openapi.Resource{{
		GVR:        corev1.SchemeGroupVersion.WithResource("configmaps"),
		Kind:       "ConfigMap",
		ListKind:   "ConfigMapList",
		Namespaced: true,
		Verbs:      []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
		Object:     &corev1.ConfigMap{},
		List:       &corev1.ConfigMapList{},
	}}, "Kubernetes", "v1.32.0")
	if err != nil {
		log.Fatal(err)
	}

	// kubectl reads the index, then follows serverRelativeURL.
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b.V3Index(), &index); err != nil {
		log.Fatal(err)
	}
	url := index.Paths["api/v1"].ServerRelativeURL
	path, hash, _ := strings.Cut(strings.TrimPrefix(url, "/openapi/v3/"), "?hash=")
	doc, docHash, ok := b.V3(path)
	fmt.Println(path, ok, hash == docHash)

	var parsed struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		log.Fatal(err)
	}
	var paths []string
	for p := range parsed.Paths {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	fmt.Println(strings.Join(paths, "\n"))
	// Output:
	// api/v1 true true
	// /api/v1/configmaps
	// /api/v1/namespaces/{namespace}/configmaps
	// /api/v1/namespaces/{namespace}/configmaps/{name}
	// /api/v1/watch/configmaps
	// /api/v1/watch/namespaces/{namespace}/configmaps
	// /api/v1/watch/namespaces/{namespace}/configmaps/{name}
}
