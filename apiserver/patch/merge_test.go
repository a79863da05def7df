package patch

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/equality"
)

// mergeCases are the corners where jsonpatch.MergePatch departs from a
// plain reading of RFC 7386; mergePatch must give the same answers.
var mergeCases = []struct{ name, doc, patch string }{
	{"add", `{"a":1}`, `{"b":2}`},
	{"replace", `{"a":1}`, `{"a":"x"}`},
	{"delete", `{"a":1,"b":2}`, `{"a":null}`},
	{"delete missing", `{"a":1}`, `{"z":null}`},
	{"nested", `{"a":{"b":1,"c":2}}`, `{"a":{"b":null,"d":{"e":null,"f":3}}}`},
	{"object over scalar drops nulls", `{"a":1}`, `{"a":{"b":null,"c":1}}`},
	{"object over null drops nulls", `{"a":null}`, `{"a":{"b":null,"c":1}}`},
	{"list over object keeps nulls", `{"a":{"b":1}}`, `{"a":[{"c":null},null]}`},
	{"new list drops nulls in its objects only", `{}`, `{"a":[{"c":null,"d":1},null,[{"e":null}]]}`},
	{"scalar over object", `{"a":{"b":1}}`, `{"a":"x"}`},
	{"list patch", `{"a":1}`, `[{"a":null},null,1]`},
	{"empty patch", `{"a":1}`, `{}`},
	{"numbers kept as written", `{"a":1}`, `{"b":1.50,"c":12345678901234567890,"d":-0,"e":1e3}`},
	{"escapes", `{"a":"\u00e9"}`, `{"b":"<\u2028>","a\/b":"\ud83d\ude00"}`},
	{"duplicate keys, last wins", `{"a":1}`, `{"b":1,"b":null,"c":null,"c":2}`},
	{"null patch", `{"a":1}`, `null`},
	{"scalar patch", `{"a":1}`, `"x"`},
	{"number patch", `{"a":1}`, `3`},
}

func TestMergePatchMatchesJSONPatchLibrary(t *testing.T) {
	for _, tt := range mergeCases {
		t.Run(tt.name, func(t *testing.T) {
			compareMerge(t, []byte(tt.doc), []byte(tt.patch))
		})
	}
}

// FuzzMergePatch checks mergePatch against jsonpatch.MergePatch on random
// documents and patches.
func FuzzMergePatch(f *testing.F) {
	for _, tt := range mergeCases {
		f.Add([]byte(tt.doc), []byte(tt.patch))
	}
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		var obj map[string]any
		if json.Unmarshal(doc, &obj) != nil || obj == nil || !json.Valid(patch) {
			t.Skip("mergePatch takes a JSON object and valid JSON")
		}
		compareMerge(t, doc, patch)
	})
}

func compareMerge(t *testing.T, doc, patch []byte) {
	t.Helper()
	want, wantErr := jsonpatch.MergePatch(doc, patch)
	got, gotErr := mergePatch(doc, patch)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("mergePatch(%s, %s) = %s, %v; jsonpatch.MergePatch = %s, %v", doc, patch, got, gotErr, want, wantErr)
	}
	if gotErr != nil {
		if c := code(gotErr); c != 400 {
			t.Errorf("mergePatch(%s, %s) error = %v (code %d), want 400", doc, patch, gotErr, c)
		}
		return
	}
	g, err := decodeJSON(got)
	if err != nil {
		t.Fatalf("mergePatch(%s, %s) = %s, not JSON: %v", doc, patch, got, err)
	}
	w, err := decodeJSON(want)
	if err != nil {
		t.Fatalf("jsonpatch.MergePatch(%s, %s) = %s, not JSON: %v", doc, patch, want, err)
	}
	if !equality.Semantic.DeepEqual(g, w) {
		t.Errorf("mergePatch(%s, %s)\n got %s\nwant %s", doc, patch, got, want)
	}
}
