package opa

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// valueTerm gives what the JSON of an object gives, read by jsonValue:
// for every kind client-go knows, filled at random (strings that are not
// UTF-8, or need escaping, among them), whole and as the shipped library
// reads a Secret create, a Pod create and a Secret update.
func TestValueTermAsJSON(t *testing.T) {
	set, _ := library(t)
	projections := map[string]*fields{"whole": allFields}
	for _, sc := range [][2]string{{"Secret", "CREATE"}, {"Pod", "CREATE"}, {"Secret", "UPDATE"}} {
		projections[sc[0]+" "+sc[1]] = set.inputs[set.scope(sc[0], sc[1])].at("request").at("object")
	}
	fill := randfill.New().NilChance(0.2).NumElements(0, 2).MaxDepth(8).RandSource(rand.NewSource(1)).Funcs(
		func(s *string, c randfill.Continue) {
			*s = []string{"", "a", "<b>&c", "d\xffe", "\u2028", `"\`, c.String(4)}[c.Intn(7)]
		},
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}[c.Intn(3)])
		},
		func(tm *metav1.Time, c randfill.Continue) {
			if c.Bool() {
				*tm = metav1.Unix(c.Int63n(1<<32), 0)
			}
		},
		func(tm *metav1.MicroTime, c randfill.Continue) {
			if c.Bool() {
				*tm = metav1.NewMicroTime(time.Unix(c.Int63n(1<<32), c.Int63n(1e9)))
			}
		},
		func(x *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*x = intstr.FromInt32(c.Int31())
			} else {
				*x = intstr.FromString(c.String(3))
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:metadata":{"f:labels":{".":{}}}}`)
		},
		func(o *runtime.Object, c randfill.Continue) {},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}`)
		},
	)
	kinds, compared := 0, 0
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		kinds++
		for i := range 5 {
			obj := reflect.New(typ)
			fill.Fill(obj.Interface())
			for name, f := range projections {
				sameAsJSON(t, fmt.Sprintf("%s #%d, %s", gvk, i, name), obj, f)
				compared++
			}
		}
	}
	if kinds < 100 {
		t.Errorf("%d kinds", kinds)
	}
	t.Logf("%d kinds, %d comparisons", kinds, compared)
}

// The shapes valueTerm leaves to encoding/json, and the rules of
// encoding/json it follows itself, give what the JSON gives.
func TestValueTermOfOddTypes(t *testing.T) {
	type Inner struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}
	// Untagged, so that their conflict is over a Go name, which go vet
	// does not question.
	type Left struct{ X string }
	type Right struct{ X string }
	type hidden struct {
		A string `json:"a"`
	}
	type zeroer struct{ N int }
	for name, v := range map[string]any{
		"embedded": &struct{ Inner }{Inner{A: "x"}},
		"embedded conflict": &struct {
			Left
			Right
		}{Left{X: "x"}, Right{X: "y"}},
		"embedded conflict with a field": &struct {
			Left
			X string
		}{Left{X: "x"}, "y"},
		"embedded pointer":     &struct{ *Inner }{&Inner{A: "x"}},
		"embedded nil pointer": &struct{ *Inner }{},
		"embedded named": &struct {
			Inner `json:"in"`
		}{Inner{A: "x"}},
		"unexported embedded": &struct{ hidden }{hidden{A: "x"}},
		"string option": &struct {
			N int `json:"n,string"`
		}{3},
		"invalid tag name": &struct {
			N int `json:"n\\"`
		}{3},
		"dash": &struct {
			N int `json:"-"`
			M int `json:"-,"`
		}{1, 2},
		"untagged": &struct{ Name string }{"x"},
		"omitempty": &struct {
			S string         `json:"s,omitempty"`
			P *int           `json:"p,omitempty"`
			M map[string]int `json:"m,omitempty"`
			Z bool           `json:"z,omitempty"`
		}{},
		"omitzero": &struct {
			T metav1.Time `json:"t,omitzero"`
			I Inner       `json:"i,omitzero"`
			Z zeroer      `json:"z,omitzero"`
		}{},
		"omitzero set": &struct {
			T metav1.Time `json:"t,omitzero"`
			I Inner       `json:"i,omitzero"`
		}{metav1.Unix(5, 0), Inner{B: 1}},
		"float": &struct {
			F float64 `json:"f"`
			G float32 `json:"g"`
		}{1e21, 0.1},
		"interface": &struct {
			X any `json:"x"`
			Y any `json:"y"`
		}{map[string]any{"a": []any{1.5, "b"}}, nil},
		"array": &struct {
			A [2]int `json:"a"`
		}{[2]int{1, 2}},
		"int keys": &struct {
			M map[int]string `json:"m"`
		}{map[int]string{1: "a"}},
		"bad key": &struct {
			M map[string]int `json:"m"`
		}{map[string]int{"a\xff": 1}},
		"bad string": &struct {
			S string `json:"s"`
		}{"a\xffb"},
		"bytes": &struct {
			B []byte `json:"b"`
			E []byte `json:"e"`
			N []byte `json:"n"`
		}{[]byte("hi"), []byte{}, nil},
		"nil slice and map": &struct {
			S []string          `json:"s"`
			M map[string]string `json:"m"`
		}{},
		"numbers": &struct {
			I int8    `json:"i"`
			U uint64  `json:"u"`
			P uintptr `json:"p"`
		}{-3, 1 << 63, 7},
		"quantity": &struct {
			Q resource.Quantity  `json:"q"`
			P *resource.Quantity `json:"p"`
		}{resource.MustParse("1.5Gi"), nil},
		"json.Number": &struct {
			N json.Number            `json:"a"`
			E json.Number            `json:"t"`
			M map[string]json.Number `json:"m"`
		}{"12", "", map[string]json.Number{"x": "1.5e3"}},
		"bad json.Number": &struct {
			N json.Number `json:"a"`
		}{"abc"},
		// Read by both projections, and an error in both.
		"channel": &struct {
			C chan int `json:"a"`
		}{make(chan int)},
	} {
		value := reflect.ValueOf(v)
		for _, f := range []*fields{allFields, {sub: map[string]*fields{"a": allFields, "t": allFields, "m": allFields}}} {
			sameAsJSON(t, name, value, f)
		}
	}
	// Which of them valueTerm reads itself.
	for _, tc := range []struct {
		v    any
		want shape
	}{
		{struct{ Inner }{}, shapeStruct},
		{struct {
			Left
			Right
		}{}, shapeJSON},
		{struct{ *Inner }{}, shapeJSON},
		{struct{ hidden }{}, shapeJSON},
		{struct {
			N int `json:",string"`
		}{}, shapeJSON},
		{metav1.Time{}, shapeJSON},
		{[]byte{}, shapeBytes},
		{map[string]int{}, shapeMap},
		{map[int]int{}, shapeJSON},
	} {
		if got := planOf(reflect.TypeOf(tc.v)).shape; got != tc.want {
			t.Errorf("%T: shape %d, want %d", tc.v, got, tc.want)
		}
	}
}

// sameAsJSON checks that valueTerm(v, f) is what v's JSON gives, or fails
// as it does.
func sameAsJSON(t *testing.T, what string, v reflect.Value, f *fields) {
	t.Helper()
	want, wantErr := viaJSON(v, f)
	got, gotErr := valueTerm(v, f)
	if (gotErr != nil) != (wantErr != nil) {
		t.Errorf("%s: error %v, by way of JSON: %v", what, gotErr, wantErr)
		return
	}
	if wantErr == nil && !got.Equal(want) {
		t.Errorf("%s: %v\nby way of JSON: %v", what, got, want)
	}
}

// A cycle of pointers is an error, as encoding/json has it, not a stack
// exhausted.
func TestValueTermOfACycle(t *testing.T) {
	type node struct {
		Next *node `json:"next"`
	}
	n := &node{}
	n.Next = n
	if _, err := valueTerm(reflect.ValueOf(n), allFields); err == nil {
		t.Error("a cycle of pointers gave a value")
	}
	deep := &node{}
	for range maxDepth * 2 {
		deep = &node{Next: deep}
	}
	sameAsJSON(t, "a deep value", reflect.ValueOf(deep), allFields)
}
