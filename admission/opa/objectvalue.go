package opa

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
)

// valueTerm is v as AST value: what jsonValue(json.Marshal(v), f) gives,
// without the JSON in between, and without even looking at what f leaves
// out (a Secret's managed fields, a Pod's status). It walks the common
// shapes of API types (structs, pointers, strings, numbers, booleans,
// byte slices, slices, maps with string keys) by encoding/json's rules;
// anything else (a type with its own MarshalJSON or MarshalText, a float,
// an interface, a struct whose fields embed in a way those rules resolve
// by precedence, a string that is not UTF-8) is marshalled by
// encoding/json and read back, and so is exactly what the API serves.
func valueTerm(v reflect.Value, f *fields) (*ast.Term, error) {
	return walkValue(v, f, 0)
}

// maxDepth is how deep walkValue goes before it leaves the rest to
// encoding/json, which tells a cycle of pointers, an error, from a deep
// value: an object decoded from a request has no cycle, but one would
// otherwise exhaust the stack.
const maxDepth = 500

func walkValue(v reflect.Value, f *fields, depth int) (*ast.Term, error) {
	if depth > maxDepth {
		return viaJSON(v, f)
	}
	depth++
	p := planOf(v.Type())
	switch p.shape {
	case shapePointer:
		if v.IsNil() {
			return ast.NullTerm(), nil
		}
		return walkValue(v.Elem(), f, depth)
	case shapeString:
		s := v.String()
		if !utf8.ValidString(s) {
			return viaJSON(v, f)
		}
		return stringTerm(s), nil
	case shapeBool:
		return ast.InternedTerm(v.Bool()), nil
	case shapeInt:
		return ast.NewTerm(ast.Number(strconv.FormatInt(v.Int(), 10))), nil
	case shapeUint:
		return ast.NewTerm(ast.Number(strconv.FormatUint(v.Uint(), 10))), nil
	case shapeBytes:
		if v.IsNil() {
			return ast.NullTerm(), nil
		}
		return ast.StringTerm(base64String(v.Bytes())), nil
	case shapeSlice:
		if v.IsNil() {
			return ast.NullTerm(), nil
		}
		// An array is read whole, as jsonValue reads it.
		elems := make([]*ast.Term, v.Len())
		for i := range elems {
			t, err := walkValue(v.Index(i), allFields, depth)
			if err != nil {
				return nil, err
			}
			elems[i] = t
		}
		return ast.ArrayTerm(elems...), nil
	case shapeMap:
		if v.IsNil() {
			return ast.NullTerm(), nil
		}
		obj := ast.NewObjectWithCapacity(v.Len())
		for it := v.MapRange(); it.Next(); {
			k := it.Key().String()
			if !utf8.ValidString(k) {
				return viaJSON(v, f)
			}
			sub := f.at(k)
			if sub == nil {
				continue
			}
			t, err := walkValue(it.Value(), sub, depth)
			if err != nil {
				return nil, err
			}
			obj.Insert(stringTerm(k), t)
		}
		return ast.NewTerm(obj), nil
	case shapeStruct:
		obj := ast.NewObjectWithCapacity(len(p.fields))
		for i := range p.fields {
			field := &p.fields[i]
			sub := f.at(field.name)
			if sub == nil {
				continue
			}
			fv := v.FieldByIndex(field.index)
			if field.omitEmpty && isEmptyValue(fv) || field.omitZero && field.isZero(fv) {
				continue
			}
			t, err := walkValue(fv, sub, depth)
			if err != nil {
				return nil, err
			}
			obj.Insert(stringTerm(field.name), t)
		}
		return ast.NewTerm(obj), nil
	}
	return viaJSON(v, f)
}

// base64String is base64.StdEncoding.EncodeToString(b) in one allocation
// instead of two: a Secret's value is its size again.
func base64String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	buf := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(buf, b)
	// buf is not written again.
	return unsafe.String(&buf[0], len(buf))
}

// viaJSON is valueTerm(v, f) by way of v's JSON. An addressable v is
// marshalled by its address, as encoding/json marshals a field it reaches
// through a pointer, so that a MarshalJSON method of the pointer is used.
func viaJSON(v reflect.Value, f *fields) (*ast.Term, error) {
	x := v.Interface()
	if v.CanAddr() {
		x = v.Addr().Interface()
	}
	doc, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	value, err := jsonValue(doc, f)
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(value), nil
}

// shape is how valueTerm makes the value of a type.
type shape int

const (
	shapeJSON shape = iota // by way of its JSON
	shapePointer
	shapeString
	shapeBool
	shapeInt
	shapeUint
	shapeBytes
	shapeSlice
	shapeMap
	shapeStruct
)

// plan is how valueTerm makes the value of one type.
type plan struct {
	shape shape
	// fields are a struct's, with those of the structs it embeds, each
	// under its JSON name, unique.
	fields []structField
}

type structField struct {
	name                string
	index               []int
	omitEmpty, omitZero bool
	// isZero is what omitzero asks of the field: its IsZero method, or
	// reflect's IsZero when it has none.
	isZero func(reflect.Value) bool
}

var plans sync.Map // reflect.Type → *plan

func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p, _ := plans.LoadOrStore(t, makePlan(t))
	return p.(*plan)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	zeroer        = reflect.TypeFor[interface{ IsZero() bool }]()
	jsonNumber    = reflect.TypeFor[json.Number]()
)

// marshals reports whether encoding/json marshals t, or a t it can
// address, by a method of its own.
func marshals(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || pt.Implements(jsonMarshaler) || pt.Implements(textMarshaler)
}

func makePlan(t reflect.Type) *plan {
	if marshals(t) || t == jsonNumber {
		// encoding/json writes a json.Number as the number it holds.
		return &plan{shape: shapeJSON}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return &plan{shape: shapePointer}
	case reflect.String:
		return &plan{shape: shapeString}
	case reflect.Bool:
		return &plan{shape: shapeBool}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &plan{shape: shapeInt}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return &plan{shape: shapeUint}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			// encoding/json writes such a slice as base64 unless its
			// elements marshal themselves.
			if marshals(t.Elem()) {
				return &plan{shape: shapeSlice}
			}
			return &plan{shape: shapeBytes}
		}
		return &plan{shape: shapeSlice}
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return &plan{shape: shapeMap}
		}
	case reflect.Struct:
		fields, ok := structFields(t, nil)
		if !ok {
			return &plan{shape: shapeJSON}
		}
		seen := map[string]bool{}
		for _, f := range fields {
			if seen[f.name] {
				// Which of the two encoding/json keeps depends on
				// their depth and tags: left to it.
				return &plan{shape: shapeJSON}
			}
			seen[f.name] = true
		}
		return &plan{shape: shapeStruct, fields: fields}
	}
	return &plan{shape: shapeJSON}
}

// structFields are the fields encoding/json writes of struct type t, by
// its rules, with those of the structs t embeds by value and without a
// name; false when t has a field those rules treat in a way structFields
// leaves to encoding/json (an embedded pointer, the string option).
func structFields(t reflect.Type, index []int) ([]structField, bool) {
	var out []structField
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			if sf.Type.Kind() == reflect.Pointer {
				return nil, false
			}
			if !sf.IsExported() {
				// encoding/json writes the exported fields of an
				// unexported struct embedded so, which reflect reads
				// only in part.
				if sf.Type.Kind() == reflect.Struct {
					return nil, false
				}
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validTagName(name) {
			name = ""
		}
		options := strings.Split(opts, ",")
		if slices.Contains(options, "string") {
			return nil, false
		}
		at := append(append([]int(nil), index...), i)
		if name == "" && sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			embedded, ok := structFields(sf.Type, at)
			if !ok {
				return nil, false
			}
			out = append(out, embedded...)
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := structField{name: name, index: at, omitEmpty: slices.Contains(options, "omitempty"), omitZero: slices.Contains(options, "omitzero")}
		if f.omitZero {
			f.isZero = isZeroFunc(sf.Type)
		}
		out = append(out, f)
	}
	return out, true
}

// validTagName is encoding/json's test of a name in a json tag.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// isZeroFunc is how encoding/json tells a value of t zero for omitzero:
// by its IsZero method, where t or a pointer to it has one.
func isZeroFunc(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(zeroer):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil() || v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(zeroer):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Implements(zeroer):
		return func(v reflect.Value) bool { return v.Interface().(interface{ IsZero() bool }).IsZero() }
	case reflect.PointerTo(t).Implements(zeroer):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				v = c
			}
			return v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
		}
	}
	return reflect.Value.IsZero
}

// isEmptyValue is encoding/json's test for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
