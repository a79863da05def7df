package opa

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
)

func TestRedactor(t *testing.T) {
	const value = `p"w<1>é`
	input, err := ast.InterfaceToValue(map[string]any{"request": map[string]any{
		"object": map[string]any{
			"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(value))},
			"stringData": map[string]any{"token": "tok-123"},
			"metadata":   map[string]any{"name": "db"},
		},
		"oldObject": map[string]any{"binaryData": map[string]any{"key": base64.StdEncoding.EncodeToString([]byte("old-key"))}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRedactor(input)
	for _, tc := range []struct{ in, want string }{
		{in: "raw " + value, want: "raw " + Redacted},
		{in: "base64 " + base64.StdEncoding.EncodeToString([]byte(value)), want: "base64 " + Redacted},
		{in: `quoted "p\"w<1>é"`, want: `quoted "` + Redacted + `"`},
		{in: `go-quoted ascii p\"w<1>\u00e9`, want: `go-quoted ascii p\"w<1>\u00e9`}, // not a form Go, Rego or JSON print
		{in: `json "p\"w\u003c1\u003eé"`, want: `json "` + Redacted + `"`},
		{in: "stringData tok-123 and its base64 " + base64.StdEncoding.EncodeToString([]byte("tok-123")), want: "stringData " + Redacted + " and its base64 " + Redacted},
		{in: "old binaryData old-key", want: "old binaryData " + Redacted},
		{in: "the name db stays", want: "the name db stays"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// One for strings no longer than this one hides as much.
		if got := newRedactorUpTo(len(tc.in), input).String(tc.in); got != tc.want {
			t.Errorf("up to %d bytes: String(%q) = %q, want %q", len(tc.in), tc.in, got, tc.want)
		}
	}
	// old-key, 7 bytes, is 12 characters of base64 in the input: a
	// redactor for 7 bytes still hides it, one for 6 has no form of it.
	if got := newRedactorUpTo(7, input).String("old-key"); got != Redacted {
		t.Errorf("up to 7 bytes: String(old-key) = %q", got)
	}
	for _, f := range newRedactorUpTo(6, input).forms {
		if strings.Contains(f, "old-key") {
			t.Errorf("up to 6 bytes: a form %q of old-key, which cannot fit", f)
		}
	}
	op := map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]any{"tok-123": []any{"x", value}}}
	want := map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]any{Redacted: []any{"x", Redacted}}}
	if diff := cmp.Diff(want, r.Value(op)); diff != "" {
		t.Errorf("Value (-want +got):\n%s", diff)
	}
	if r.Empty() {
		t.Error("Empty with data to hide")
	}

	noData, err := ast.InterfaceToValue(map[string]any{"request": map[string]any{"object": map[string]any{"spec": map[string]any{"x": "y"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := NewRedactor(noData); !r.Empty() || r.String("y") != "y" {
		t.Errorf("a Redactor of an input without data hides something")
	}
}

// A plain string is one every quoting leaves as it is, so that the
// Redactor need not quote it.
func TestPlain(t *testing.T) {
	var samples []string
	for c := 0; c < 0x80; c++ {
		samples = append(samples, "a"+string(rune(c))+"z")
	}
	samples = append(samples, "é", "\u2028", "YWJj+/==", "hunter2", "")
	for _, s := range samples {
		q := strconv.Quote(s)
		same := q[1:len(q)-1] == s
		for _, html := range []bool{true, false} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			j := strings.TrimSpace(b.String())
			same = same && j[1:len(j)-1] == s
		}
		if plain(s) && !same {
			t.Errorf("plain(%q), but a quoting changes it", s)
		}
	}
}
