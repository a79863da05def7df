package opa

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// jsonValue is the AST value of a JSON document: what ast.InterfaceToValue
// makes of the document decoded, without the Go maps and slices in
// between, which cost as much again as the value itself. The document
// is one value; anything after it is an error. Of an object, only the
// members f reads are decoded; the others are passed over (see skip).
func jsonValue(doc []byte, f *fields) (ast.Value, error) {
	// The strings of the value are substrings of one copy of the
	// document, not a copy each.
	d := jsonDecoder{doc: doc, text: string(doc)}
	t, err := d.value(f)
	if err != nil {
		return nil, err
	}
	if d.space(); d.pos != len(doc) {
		return nil, d.errorf("data after the value")
	}
	return t.Value, nil
}

type jsonDecoder struct {
	doc  []byte
	text string // doc
	pos  int
}

var errJSONEnd = errors.New("json: unexpected end of input")

func (d *jsonDecoder) errorf(format string, args ...any) error {
	return fmt.Errorf("json: offset %d: %s", d.pos, fmt.Sprintf(format, args...))
}

func (d *jsonDecoder) space() {
	for d.pos < len(d.doc) {
		switch d.doc[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(f *fields) (*ast.Term, error) {
	d.space()
	if d.pos == len(d.doc) {
		return nil, errJSONEnd
	}
	switch c := d.doc[d.pos]; {
	case c == '{':
		return d.object(f)
	case c == '[':
		return d.array()
	case c == '"':
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return stringTerm(s), nil
	case c == 't':
		return d.literal("true", ast.InternedTerm(true))
	case c == 'f':
		return d.literal("false", ast.InternedTerm(false))
	case c == 'n':
		return d.literal("null", ast.NullTerm())
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	default:
		return nil, d.errorf("unexpected %q", c)
	}
}

func (d *jsonDecoder) literal(word string, t *ast.Term) (*ast.Term, error) {
	if len(d.doc)-d.pos < len(word) || string(d.doc[d.pos:d.pos+len(word)]) != word {
		return nil, d.errorf("invalid literal")
	}
	d.pos += len(word)
	return t, nil
}

func (d *jsonDecoder) object(f *fields) (*ast.Term, error) {
	d.pos++ // {
	var items [][2]*ast.Term
	d.space()
	if d.pos < len(d.doc) && d.doc[d.pos] == '}' {
		d.pos++
		return ast.ObjectTerm(), nil
	}
	for {
		d.space()
		if d.pos == len(d.doc) {
			return nil, errJSONEnd
		}
		if d.doc[d.pos] != '"' {
			return nil, d.errorf("object key is not a string")
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.pos == len(d.doc) || d.doc[d.pos] != ':' {
			return nil, d.errorf("no colon after object key")
		}
		d.pos++
		if sub := f.at(k); sub != nil {
			v, err := d.value(sub)
			if err != nil {
				return nil, err
			}
			items = append(items, [2]*ast.Term{stringTerm(k), v})
		} else if err := d.skip(); err != nil {
			return nil, err
		}
		d.space()
		if d.pos == len(d.doc) {
			return nil, errJSONEnd
		}
		switch d.doc[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			// Insert, not NewObject, which takes the keys to be
			// distinct: of a key given twice, the last value counts,
			// as in encoding/json.
			obj := ast.NewObjectWithCapacity(len(items))
			for _, kv := range items {
				obj.Insert(kv[0], kv[1])
			}
			return ast.NewTerm(obj), nil
		default:
			return nil, d.errorf("unexpected %q in object", d.doc[d.pos])
		}
	}
}

func (d *jsonDecoder) array() (*ast.Term, error) {
	d.pos++ // [
	var elems []*ast.Term
	d.space()
	if d.pos < len(d.doc) && d.doc[d.pos] == ']' {
		d.pos++
		return ast.ArrayTerm(), nil
	}
	for {
		// An array is read whole: a reference reads an element by
		// its index from the array as it is.
		v, err := d.value(allFields)
		if err != nil {
			return nil, err
		}
		elems = append(elems, v)
		d.space()
		if d.pos == len(d.doc) {
			return nil, errJSONEnd
		}
		switch d.doc[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return ast.ArrayTerm(slices.Clip(elems)...), nil
		default:
			return nil, d.errorf("unexpected %q in array", d.doc[d.pos])
		}
	}
}

// skip passes over a value that is not read. Its text is not checked
// beyond where its strings and brackets end: the documents are
// json.Marshal's.
func (d *jsonDecoder) skip() error {
	d.space()
	if d.pos == len(d.doc) {
		return errJSONEnd
	}
	switch d.doc[d.pos] {
	case '"':
		return d.skipString()
	case '{', '[':
		depth := 0
		for d.pos < len(d.doc) {
			switch d.doc[d.pos] {
			case '"':
				if err := d.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					d.pos++
					return nil
				}
			}
			d.pos++
		}
		return errJSONEnd
	default:
		start := d.pos
		for d.pos < len(d.doc) && !strings.ContainsRune(",}] \t\n\r", rune(d.doc[d.pos])) {
			d.pos++
		}
		if d.pos == start {
			return d.errorf("unexpected %q", d.doc[d.pos])
		}
		return nil
	}
}

// skipString passes over a string.
func (d *jsonDecoder) skipString() error {
	d.pos++ // "
	for d.pos < len(d.doc) {
		switch d.doc[d.pos] {
		case '"':
			d.pos++
			return nil
		case '\\':
			d.pos += 2
		default:
			d.pos++
		}
	}
	return errJSONEnd
}

// string reads a string. One without escapes, which is most, is taken as
// it is; one with escapes is left to encoding/json, which decodes them.
func (d *jsonDecoder) string() (string, error) {
	start := d.pos
	d.pos++ // "
	plain := true
	for d.pos < len(d.doc) {
		switch c := d.doc[d.pos]; {
		case c == '"':
			d.pos++
			if plain {
				if raw := d.text[start+1 : d.pos-1]; utf8.ValidString(raw) {
					return raw, nil
				}
			}
			var s string
			if err := json.Unmarshal(d.doc[start:d.pos], &s); err != nil {
				return "", fmt.Errorf("json: offset %d: %w", start, err)
			}
			return s, nil
		case c == '\\':
			plain = false
			d.pos += 2
		case c < 0x20:
			return "", d.errorf("control character in string")
		default:
			d.pos++
		}
	}
	return "", errJSONEnd
}

// number reads a number, kept as its text as OPA keeps a JSON number.
func (d *jsonDecoder) number() (*ast.Term, error) {
	start := d.pos
	for d.pos < len(d.doc) {
		c := d.doc[d.pos]
		if c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' && (c < '0' || c > '9') {
			break
		}
		d.pos++
	}
	text := d.doc[start:d.pos]
	if !json.Valid(text) {
		return nil, fmt.Errorf("json: offset %d: invalid number %q", start, text)
	}
	v, err := ast.InterfaceToValue(json.Number(text))
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(v), nil
}
