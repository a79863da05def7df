package opa

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Redacted stands in for a value that must not be shown.
const Redacted = "<redacted>"

// dataFields are the fields of an object whose values are secret: a
// Secret's data and stringData, and a ConfigMap's data and binaryData,
// which a policy may be checking for plaintext credentials.
var dataFields = []string{"data", "stringData", "binaryData"}

// Redactor hides the values of the data fields of the objects of
// admission inputs in what is shown of their evaluation: decisions,
// messages, errors and traces. A policy may read those values; what the
// tools print of its evaluation must not show them. A value is hidden in
// every form it is likely to be printed in: as the input carries it
// (base64 for data and binaryData), decoded or encoded, and quoted as Go,
// Rego or JSON quote it.
type Redactor struct {
	// forms are every form of every value, longest first.
	forms []string
	// replacer replaces each form in one pass, the longest first at
	// each position. It is built the first time a string holds a form:
	// building it costs more than the rest of a request's redaction
	// (~10 µs for a 1 KiB Secret value), and most messages hold none.
	replacer func() *strings.Replacer
}

// NewRedactor hides the data values of the objects (object and
// oldObject) of inputs, AdmissionReviews as Input builds them.
func NewRedactor(inputs ...ast.Value) *Redactor {
	return newRedactorUpTo(-1, inputs...)
}

// newRedactorUpTo is NewRedactor for strings of at most limit bytes, or
// of any length if limit is negative: it leaves out the values whose forms are
// all longer, which no such string can hold. A Secret's 1 KiB value then
// costs no decoding and no encoding where a policy's message of a hundred
// bytes is redacted.
func newRedactorUpTo(limit int, inputs ...ast.Value) *Redactor {
	seen := map[string]bool{}
	add := func(s string) {
		if s == "" {
			return
		}
		if plain(s) {
			// Every quoting leaves it as it is. Most values are
			// base64 or plain text, and quoting is most of the cost.
			seen[s] = true
			return
		}
		quoted := strconv.Quote(s)
		seen[s], seen[quoted[1:len(quoted)-1]] = true, true
		for _, html := range []bool{true, false} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if enc.Encode(s) == nil {
				j := strings.TrimSpace(b.String())
				seen[j[1:len(j)-1]] = true
			}
		}
	}
	for _, input := range inputs {
		for _, v := range dataValues(input) {
			if limit >= 0 && shortestForm(len(v)) > limit {
				continue
			}
			add(v)
			if raw, err := base64.StdEncoding.DecodeString(v); err == nil {
				add(string(raw))
			}
			add(base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	r := &Redactor{}
	for s := range seen {
		r.forms = append(r.forms, s)
	}
	slices.SortFunc(r.forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	r.replacer = sync.OnceValue(func() *strings.Replacer {
		pairs := make([]string, 0, 2*len(r.forms))
		for _, f := range r.forms {
			pairs = append(pairs, f, Redacted)
		}
		return strings.NewReplacer(pairs...)
	})
	return r
}

// shortestForm is a bound below the length of every form of a value of n
// bytes: quoting and base64 lengthen it; decoded as base64, it is 3 bytes
// for each 4 but for up to 2 of padding.
func shortestForm(n int) int { return n/4*3 - 2 }

// plain reports whether s is printable ASCII that neither Go, Rego nor
// JSON (escaping HTML or not) quotes other than as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// dataRefs are where dataValues looks in an input: each data field of
// object and oldObject.
var dataRefs = func() []ast.Ref {
	var refs []ast.Ref
	for _, key := range []string{"object", "oldObject"} {
		for _, field := range dataFields {
			refs = append(refs, ast.Ref{ast.StringTerm("request"), ast.StringTerm(key), ast.StringTerm(field)})
		}
	}
	return refs
}()

// dataValues are the strings of the data fields of input's objects.
func dataValues(input ast.Value) []string {
	var out []string
	for _, ref := range dataRefs {
		v, err := input.Find(ref)
		if err != nil {
			continue
		}
		obj, ok := v.(ast.Object)
		if !ok {
			continue
		}
		obj.Foreach(func(_, t *ast.Term) {
			if s, ok := t.Value.(ast.String); ok {
				out = append(out, string(s))
			}
		})
	}
	return out
}

// Empty reports whether there is nothing to hide.
func (r *Redactor) Empty() bool { return len(r.forms) == 0 }

// String is s with every form of every value replaced by Redacted.
func (r *Redactor) String(s string) string {
	if !r.holdsForm(s) {
		return s
	}
	return r.replacer().Replace(s)
}

// holdsForm reports whether some form of some value is in s.
func (r *Redactor) holdsForm(s string) bool {
	for _, f := range r.forms {
		if len(f) <= len(s) && strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// Strings redacts each of ss.
func (r *Redactor) Strings(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.String(s)
	}
	return out
}

// Value is v, a value decoded from JSON (a patch operation), with every
// string redacted, keys too.
func (r *Redactor) Value(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.Value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.String(k)] = r.Value(e)
		}
		return out
	default:
		return v
	}
}

// clean reports whether s holds no form of any value.
func (r *Redactor) clean(s string) bool {
	return r.Empty() || r.String(s) == s
}
