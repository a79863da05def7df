package opa

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/open-policy-agent/opa/v1/ast"
)

// fieldsSecret is a Secret as the server admits it, with what most rules
// never read: managed fields, labels, annotations, a uid.
func fieldsSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "db", Namespace: "team", UID: "u-1", ResourceVersion: "42",
			Labels:      map[string]string{"tier": "db", "n": "not-a-number"},
			Annotations: map[string]string{"owner": "needle"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "managed-by-x", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				Time: &metav1.Time{Time: time.Unix(1700000000, 0)}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:pw":{}}}`)},
			}},
		},
		Data: map[string][]byte{"pw": []byte("hunter2")},
	}
}

// The input the server builds holds what the rules of the request's query
// may read, however they read it, and no less: each policy below reads
// one field the rest of the input cannot stand in for, in one of the ways
// Rego can, and must decide of the server's input as of the whole one.
func TestInputHoldsWhatRulesRead(t *testing.T) {
	for _, tt := range []struct {
		name, policy string
		op           admission.Operation
		// deny is the message of the policy, of the whole input;
		// "error" when its evaluation fails.
		deny string
	}{
		{"the whole input", `deny contains "bare" if contains(json.marshal(input), "managed-by-x")`, admission.Create, "bare"},
		{"a key from a variable", `deny contains k if {
	some k
	input.request.object.metadata.annotations[k] == "needle"
}`, admission.Create, "owner"},
		{"walk", `deny contains "walk" if {
	walk(input, [_, v])
	v == "needle"
}`, admission.Create, "walk"},
		{"a function's argument", `f(o) if o.metadata.labels.tier == "db"

deny contains "function" if f(input.request.object)`, admission.Create, "function"},
		{"object.get with a key from a variable", `deny contains "get" if {
	k := concat("", ["meta", "data"])
	object.get(input.request.object, k, {}).uid == "u-1"
}`, admission.Create, "get"},
		{"object.get of a path", `deny contains "path" if object.get(input.request, ["object", "metadata", "resourceVersion"], "") == "42"`, admission.Create, "path"},
		{"object.get of an alias used again", `deny contains "alias" if {
	o := input.request.object
	object.get(o, "type", "") == ""
	o.metadata.uid == "u-1"
}`, admission.Create, "alias"},
		{"a rule of another package", `deny contains "lib" if data.lib.owner == "needle"`, admission.Create, "lib"},
		{"rules named by a variable", `deny contains "dynamic" if {
	some name
	data.lib[name] == "needle"
}`, admission.Create, "dynamic"},
		{"an else branch", `version := "none" if {
	false
} else := input.request.object.metadata.resourceVersion

deny contains "else" if version == "42"`, admission.Create, "else"},
		{"a comprehension", `deny contains "comprehension" if {
	managers := {m | some e in input.request.object.metadata.managedFields; m := e.manager}
	"managed-by-x" in managers
}`, admission.Create, "comprehension"},
		{"every", `untiered if {
	every k, _ in input.request.object.metadata.labels {
		k != "tier"
	}
}

deny contains "every" if not untiered`, admission.Create, "every"},
		{"a with modifier", `g if input.request.object.metadata.labels.tier == "db"

deny contains "with" if g with input.request.name as "other"`, admission.Create, "with"},
		// v := x reads that x is there, even when v is not read.
		{"a variable set and never read", `deny contains "owned" if {
	owner := input.request.object.metadata.annotations.owner
}`, admission.Create, "owned"},
		{"a variable set and never read, in a conflict", `level := 1 if {
	owner := input.request.object.metadata.annotations.owner
}

level := 2 if true

deny contains "level" if level > 0`, admission.Create, "error"},
		{"a variable read only in the head", `metadata[v].seen := true if {
	v := input.request.object.metadata
}

deny contains "head" if {
	some m
	metadata[m].seen
	m.name == "db"
}`, admission.Create, "head"},
		// A module may replace object.get, and the replacement read more
		// than the key.
		{"object.get replaced", `owner_of(o, _, _) := o.metadata.annotations.owner

typed if object.get(input.request.object, "type", "none") == "needle"

deny contains "replaced" if typed with object.get as owner_of`, admission.Create, "replaced"},
		// OPA's rule index may evaluate a body for another kind or
		// operation up to the expression that excludes it, which here
		// fails the evaluation (and refuses the request): its choice
		// reads the owner annotation, after that expression.
		{"before the kind, for the index", `deny contains "pod" if {
	to_number(input.request.object.metadata.labels.n) > 0
	k := input.request.kind.kind
	input.request.kind.kind in {"Secret", "Pod"}
	k == "Pod"
	input.request.object.metadata.annotations.owner == "needle"
}`, admission.Create, "error"},
		{"before the operation, for the index", `deny contains "update" if {
	to_number(input.request.object.metadata.labels.n) > 0
	op := input.request.operation
	input.request.operation in {"CREATE", "UPDATE"}
	op == "UPDATE"
	input.request.object.metadata.annotations.owner == "needle"
}`, admission.Create, "error"},
		{"the old object", `deny contains "old" if {
	input.request.operation == "UPDATE"
	input.request.oldObject.metadata.annotations.owner == "needle"
}`, admission.Update, "old"},
		{"the options", `deny contains "options" if input.request.options.kind == "CreateOptions"`, admission.Create, "options"},
		{"the uid", `deny contains "uid" if count(input.request.uid) == 36`, admission.Create, "uid"},
		{"the requested kind", `deny contains "requested" if input.request.requestKind.kind == "Secret"`, admission.Create, "requested"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, map[string]string{
				"p.rego":   "package kubernetes.admission\n\n" + tt.policy + "\n",
				"lib.rego": "package lib\n\nowner := input.request.object.metadata.annotations.owner\n",
			})
			var old runtime.Object
			if tt.op == admission.Update {
				old = fieldsSecret()
			}
			a := admission.NewAttributesRecord(fieldsSecret(), old, corev1.SchemeGroupVersion.WithKind("Secret"), "team", "db", corev1.SchemeGroupVersion.WithResource("secrets"), "", tt.op, &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1"}}, false, &user.DefaultInfo{Name: "alice"})
			whole, wholeErr := evalWith(set, a, Input)
			served, servedErr := evalWith(set, a, set.Input)
			if (wholeErr != nil) != (servedErr != nil) || !reflect.DeepEqual(whole, served) {
				t.Fatalf("of the server's input: %v, %v; of the whole input: %v, %v", served, servedErr, whole, wholeErr)
			}
			if tt.deny == "error" {
				if wholeErr == nil {
					t.Fatalf("%v; want an error", whole)
				}
				return
			}
			if wholeErr != nil || len(whole) != 1 || !reflect.DeepEqual(whole[0].Deny, []string{tt.deny}) {
				t.Fatalf("%v, %v; want %q", whole, wholeErr, tt.deny)
			}
		})
	}
}

func evalWith(set *Set, a admission.Attributes, input func(admission.Attributes) (ast.Value, error)) ([]Decision, error) {
	in, err := input(a)
	if err != nil {
		return nil, err
	}
	return set.Eval(context.Background(), in)
}

// For a Secret create, the shipped library reads little of the request:
// the server's input leaves out the rest, managed fields first.
func TestInputLeavesOutWhatNoRuleReads(t *testing.T) {
	set, _ := library(t)
	a := admission.NewAttributesRecord(fieldsSecret(), nil, corev1.SchemeGroupVersion.WithKind("Secret"), "team", "db", corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	in, err := set.Input(a)
	if err != nil {
		t.Fatal(err)
	}
	text := in.String()
	for _, absent := range []string{"managed-by-x", "needle", "u-1", "CreateOptions", `"uid"`, "requestKind"} {
		if strings.Contains(text, absent) {
			t.Errorf("the input holds %s: %s", absent, text)
		}
	}
	for _, present := range []string{`"namespace": "team"`, `"pw": "aHVudGVyMg=="`, `"operation": "CREATE"`} {
		if !strings.Contains(text, present) {
			t.Errorf("the input lacks %s: %s", present, text)
		}
	}
	// An update of a Secret compares the objects whole.
	update := admission.NewAttributesRecord(fieldsSecret(), fieldsSecret(), corev1.SchemeGroupVersion.WithKind("Secret"), "team", "db", corev1.SchemeGroupVersion.WithResource("secrets"), "", admission.Update, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "alice"})
	if in, err := set.Input(update); err != nil || !strings.Contains(in.String(), "managed-by-x") {
		t.Errorf("an update's input: %v, %v; want the objects whole", in, err)
	}
}
