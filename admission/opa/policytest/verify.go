package policytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/trustplane/trustplane/admission/opa"
)

// VerifyOptions say which suites to verify against which policies.
type VerifyOptions struct {
	// Policies are .rego files and directories, as for Run.
	Policies []string
	// Suites are suite files and directories holding them.
	Suites []string
	// Run, when set, verifies only the cases whose "suite.case" name
	// matches it.
	Run string
	// Timeout bounds each evaluation, as on the server; 0 is
	// opa.DefaultTimeout.
	Timeout time.Duration
}

// Verify decides every case of the suites with the policies, as the API
// server would (Decide), and reports, as a test each, whether each
// outcome is the one its case expects. A case that fails has, as its
// output, what differed and the decision. Bad input (a suite or a policy
// that does not load, with its file:line) is an InputError.
func Verify(ctx context.Context, o VerifyOptions) (*Report, error) {
	run, err := regexp.Compile(o.Run)
	if err != nil {
		return nil, &InputError{fmt.Errorf("--run %q: %w", o.Run, err)}
	}
	if len(o.Policies) == 0 {
		return nil, &InputError{errors.New("no policies given")}
	}
	kinds, err := NewKinds()
	if err != nil {
		return nil, err
	}
	suites, err := ReadSuites(kinds, o.Suites...)
	if err != nil {
		return nil, err
	}
	data := opa.NewData()
	set, err := data.LoadDirs(ctx, o.Policies...)
	if err != nil {
		return nil, &InputError{err}
	}
	report := &Report{}
	for _, s := range suites {
		// Each suite's cluster holds its own objects, and only those.
		if err := data.Clear(ctx); err != nil {
			return nil, err
		}
		for _, obj := range s.Objects {
			if err := kinds.Replicate(ctx, data, obj); err != nil {
				return nil, &InputError{fmt.Errorf("%s: objects: %w", s.Path, err)}
			}
		}
		pkg := strings.TrimSuffix(filepath.Base(s.Path), filepath.Ext(s.Path))
		for _, c := range s.Cases {
			if !run.MatchString(pkg + "." + c.Name) {
				continue
			}
			r, err := verifyCase(ctx, kinds, set, c, o.Timeout)
			if err != nil {
				return nil, &InputError{fmt.Errorf("%s:%d: case %q: %w", s.Path, c.Line, c.Name, err)}
			}
			r.Location, r.Package = &ast.Location{File: s.Path, Row: c.Line}, pkg
			report.Results = append(report.Results, r)
		}
	}
	return report, nil
}

// verifyCase decides one case and compares.
func verifyCase(ctx context.Context, kinds *Kinds, set *opa.Set, c *Case, timeout time.Duration) (*tester.Result, error) {
	var attrs admission.Attributes
	var err error
	if c.Review != nil {
		attrs, err = kinds.ReviewAttributes(c.Review.Request)
	} else {
		attrs, err = kinds.Attributes(*c.Request)
	}
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := Decide(ctx, set, attrs, DecideOptions{Timeout: timeout})
	if err != nil {
		return nil, err
	}
	r := &tester.Result{Name: c.Name, Duration: time.Since(start)}
	diffs, err := c.Expect.compare(kinds, res, attrs)
	if err != nil {
		return nil, err
	}
	if len(diffs) > 0 {
		r.Fail = true
		var b strings.Builder
		for _, d := range diffs {
			fmt.Fprintf(&b, "%s\n", d)
		}
		b.WriteString("decision:\n")
		if err := res.WriteText(&b); err != nil {
			return nil, err
		}
		r.Output = []byte(b.String())
	}
	return r, nil
}

// compare lists how res, the decision of the request attrs, differs from
// what e expects.
func (e Expect) compare(kinds *Kinds, res *Result, attrs admission.Attributes) ([]string, error) {
	var diffs []string
	if res.Outcome != e.Outcome {
		diffs = append(diffs, fmt.Sprintf("outcome: %s, want %s", res.Outcome, e.Outcome))
	}
	if e.DeniedBy != nil {
		got, want := slices.Sorted(slices.Values(res.DeniedBy)), slices.Sorted(slices.Values(e.DeniedBy))
		if !slices.Equal(got, want) {
			diffs = append(diffs, fmt.Sprintf("denied by %v, want %v", got, want))
		}
	}
	for _, re := range e.Messages {
		if !re.MatchString(res.Message) {
			diffs = append(diffs, fmt.Sprintf("the refusal %q does not match %q", res.Message, re))
		}
	}
	for _, re := range e.Warnings {
		if !slices.ContainsFunc(res.Warnings, re.MatchString) {
			diffs = append(diffs, fmt.Sprintf("no Warning header matches %q", re))
		}
	}
	if e.Patched != nil {
		diff, err := kinds.diff(e.Patched, attrs)
		if err != nil {
			return nil, err
		}
		if diff != "" {
			diffs = append(diffs, "the patched object differs:\n"+diff)
		}
	}
	return diffs, nil
}

// diff compares want with the object of attrs after the mutating stage,
// want read as the request's object is: in its namespace, defaulted.
func (k *Kinds) diff(want runtime.Object, attrs admission.Attributes) (string, error) {
	got := attrs.GetObject()
	if got == nil {
		return "", errors.New("expect.patched: the request has no object to patch")
	}
	res, gvk, err := k.resource(want)
	if err != nil {
		return "", err
	}
	if gvk != attrs.GetKind() {
		return "", fmt.Errorf("expect.patched is a %s, the request's object a %s", gvk, attrs.GetKind())
	}
	accessor, err := meta.Accessor(want)
	if err != nil {
		return "", err
	}
	if accessor.GetNamespace() == "" {
		accessor.SetNamespace(attrs.GetNamespace())
	}
	if res.Defaults != nil {
		res.Defaults(want)
	}
	w, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return "", err
	}
	g, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
	if err != nil {
		return "", err
	}
	// The kind is the request's; an object in memory need not carry it.
	for _, m := range []map[string]any{w, g} {
		delete(m, "apiVersion")
		delete(m, "kind")
	}
	if reflect.DeepEqual(w, g) {
		return "", nil
	}
	wantYAML, err := sigsyaml.Marshal(w)
	if err != nil {
		return "", err
	}
	gotYAML, err := sigsyaml.Marshal(g)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("want:\n%s\ngot:\n%s", indent(wantYAML), indent(gotYAML)), nil
}

// indent indents each line of a block by two spaces.
func indent(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return "  " + strings.Join(lines, "\n  ")
}

// ReviewAttributes are the admission attributes of a recorded request,
// taken as the review has it: its object is the one admission saw, kind
// defaults and all.
func (k *Kinds) ReviewAttributes(r *admissionv1.AdmissionRequest) (admission.Attributes, error) {
	gvk := schema.GroupVersionKind{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind}
	res, ok := k.registry.ForKind(gvk)
	if !ok {
		return nil, fmt.Errorf("kind %s is not served by trustplane", gvk)
	}
	gvr := schema.GroupVersionResource{Group: r.Resource.Group, Version: r.Resource.Version, Resource: r.Resource.Resource}
	if gvr.Resource == "" {
		gvr = res.GVR
	}
	decode := func(what string, raw runtime.RawExtension) (runtime.Object, error) {
		if len(raw.Raw) == 0 || string(raw.Raw) == "null" {
			return nil, nil
		}
		var m map[string]any
		if err := json.Unmarshal(raw.Raw, &m); err != nil {
			return nil, fmt.Errorf("request.%s: %w", what, err)
		}
		// The review's kind is the object's.
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
		doc, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		obj, err := k.Decode(doc)
		if err != nil {
			return nil, fmt.Errorf("request.%s: %w", what, err)
		}
		return obj, nil
	}
	obj, err := decode("object", r.Object)
	if err != nil {
		return nil, err
	}
	old, err := decode("oldObject", r.OldObject)
	if err != nil {
		return nil, err
	}
	op := admission.Operation(r.Operation)
	options, err := optionsOf(op)
	if err != nil {
		return nil, fmt.Errorf("request.%w", err)
	}
	switch {
	case op != admission.Delete && obj == nil:
		return nil, fmt.Errorf("a %s request needs request.object", op)
	case op == admission.Update && old == nil:
		return nil, errors.New("an UPDATE request needs request.oldObject")
	case op == admission.Delete && old == nil:
		return nil, errors.New("a DELETE request needs request.oldObject, the object deleted")
	}
	dryRun := r.DryRun != nil && *r.DryRun
	return admission.NewAttributesRecord(obj, old, gvk, r.Namespace, r.Name, gvr, r.SubResource, op, options, dryRun, userOf(r.UserInfo)), nil
}

// userOf is the user an AdmissionReview or an audit event names.
func userOf(u authenticationv1.UserInfo) user.Info {
	info := &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string][]string{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}
