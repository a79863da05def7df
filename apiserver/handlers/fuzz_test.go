package handlers

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/trustplane/trustplane/apiserver/registry"
)

// fuzzHandler is just enough of a handler to decode requests.
func fuzzHandler(t testing.TB) *Handler {
	scheme, err := registry.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(scheme)
	if err != nil {
		t.Fatal(err)
	}
	return &Handler{scheme: scheme, codecs: registry.NewCodecs(scheme), registry: reg}
}

// isClientError reports whether err is an API error with a 4xx code.
func isClientError(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500
}

var contentTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "", "text/plain", "application/json; charset=utf-8"}

func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"b"}}`), uint8(0), uint8(1), "Strict")
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n"), uint8(1), uint8(2), "")
	f.Add([]byte("k8s\x00\x0a\x04\x0a\x02v1\x12\x09ConfigMap"), uint8(2), uint8(1), "Ignore")
	f.Add([]byte(`{"metadata":{"name":`), uint8(0), uint8(3), "Warn")
	f.Add(bytes.Repeat([]byte("["), 100000), uint8(0), uint8(0), "")
	s := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte, ct, res uint8, validation string) {
		r := httptest.NewRequest(http.MethodPost, "/?fieldValidation="+url.QueryEscape(validation), bytes.NewReader(body))
		r.Header.Set("Content-Type", contentTypes[int(ct)%len(contentTypes)])
		resource := s.registry.All()[int(res)%len(s.registry.All())]
		opts, err := createOptions(r)
		if err != nil {
			if !isClientError(err) {
				t.Fatalf("options error is not a 4xx API error: %v", err)
			}
			return
		}
		obj, err := s.decodeKind(httptest.NewRecorder(), r, opts.FieldValidation, resource.GVK(), resource.NewObject)
		if err != nil {
			if !isClientError(err) {
				t.Fatalf("decode error is not a 4xx API error: %v", err)
			}
			return
		}
		if resource.Defaults != nil {
			resource.Defaults(obj)
		}
		if obj.GetObjectKind().GroupVersionKind() != resource.GVK() {
			t.Fatalf("decoded %v for a %v URL", obj.GetObjectKind().GroupVersionKind(), resource.GVK())
		}
	})
}

func FuzzSelectors(f *testing.F) {
	f.Add("app=web,tier!=db", "metadata.name=x")
	f.Add("a in (b, c),!d", "metadata.namespace!=,type=Opaque")
	f.Add("a in (", "spec.bogus=1")
	f.Add("x=\\", "metadata.name=a\\,b")
	s := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, labels, fields string) {
		for _, res := range s.registry.All() {
			r := httptest.NewRequest(http.MethodGet, "/?labelSelector="+url.QueryEscape(labels)+"&fieldSelector="+url.QueryEscape(fields), nil)
			sel, err := parseSelector(&scope{res: res}, r)
			if err != nil {
				if !isClientError(err) {
					t.Fatalf("selector error is not a 4xx API error: %v", err)
				}
				continue
			}
			sel.matches(res.NewObject())
		}
	})
}
