package policytest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/trustplane/trustplane/datadir"
)

// A suite is a YAML file of cases, each a request and the outcome the
// policies must give it:
//
//	objects:                  # what exists in the cluster, as the policies
//	  - namespaces.yaml       # read it in data.kubernetes: files of one or
//	  - {apiVersion: v1, kind: Namespace, metadata: {name: team}}  # more objects, or inline
//	cases:
//	  - name: a Secret in default is denied
//	    object: secret.yaml   # a file of one object, or the object inline
//	    operation: CREATE     # CREATE (default), UPDATE, DELETE, CONNECT
//	    oldObject: old.yaml   # with UPDATE: the object as stored
//	    namespace: default    # default: the object's, else default
//	    user: alice           # default: admin, in trustplane:cluster-admins
//	    groups: [dev]
//	    dryRun: false
//	    expect:
//	      outcome: denied     # allowed (no warnings), warned, denied
//	      deniedBy: [secrets_namespace]    # exactly these policies refuse
//	      messages: ['namespace "default"'] # regexps the refusal matches
//	      warnings: ['would deny']         # each matches a Warning header
//	      patched: patched.yaml            # the object after the patches
//	  - name: a request as recorded
//	    review: review.json   # a whole AdmissionReview instead of object…
//	    expect: {outcome: allowed}
//
// Paths are relative to the suite.

// Suite is one suite file, read and checked.
type Suite struct {
	Path string
	// Objects exist in the cluster: the policies' replicated data.
	Objects []runtime.Object
	Cases   []*Case
}

// Case is one request of a suite and its expected outcome.
type Case struct {
	Name string
	// Line is where the case starts in its suite.
	Line int
	// Request is the request as the author describes it; nil when the
	// case is a whole AdmissionReview.
	Request *Request
	// Review is the case's AdmissionReview, when it is one.
	Review *admissionv1.AdmissionReview
	Expect Expect
}

// Expect is what a case expects of the policies' decision.
type Expect struct {
	Outcome Outcome
	// DeniedBy, when set, are exactly the policies that refuse.
	DeniedBy []string
	// Messages must each match the refusal the client reads.
	Messages []*regexp.Regexp
	// Warnings must each match one of the Warning headers.
	Warnings []*regexp.Regexp
	// Patched, when set, is the object after the policies' patches.
	Patched runtime.Object
}

// suiteFile is a suite as written.
type suiteFile struct {
	Objects []yaml.Node `yaml:"objects"`
	Cases   []caseFile  `yaml:"cases"`
}

type caseFile struct {
	line      int
	Name      string     `yaml:"name"`
	Object    *yaml.Node `yaml:"-"`
	OldObject *yaml.Node `yaml:"-"`
	Operation string     `yaml:"operation"`
	Namespace string     `yaml:"namespace"`
	User      string     `yaml:"user"`
	Groups    []string   `yaml:"groups"`
	DryRun    bool       `yaml:"dryRun"`
	Review    *yaml.Node `yaml:"-"`
	Expect    expectFile `yaml:"expect"`
}

type expectFile struct {
	Outcome  string     `yaml:"outcome"`
	DeniedBy []string   `yaml:"deniedBy"`
	Messages []string   `yaml:"messages"`
	Warnings []string   `yaml:"warnings"`
	Patched  *yaml.Node `yaml:"-"`
}

// The fields each mapping of a suite may have: any other is a mistake,
// which a YAML decoder would silently drop.
var (
	suiteFields  = []string{"objects", "cases"}
	caseFields   = []string{"name", "object", "oldObject", "operation", "namespace", "user", "groups", "dryRun", "review", "expect"}
	expectFields = []string{"outcome", "deniedBy", "messages", "warnings", "patched"}
)

// checkFields refuses a mapping key that is not one of fields, or one
// given twice, with its line.
func checkFields(path string, n *yaml.Node, what string, fields []string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: %s must be a mapping", path, n.Line, what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(fields, k.Value) {
			return fmt.Errorf("%s:%d: unknown field %q in %s; want one of %s", path, k.Line, k.Value, what, strings.Join(fields, ", "))
		}
		if seen[k.Value] {
			return fmt.Errorf("%s:%d: field %q given twice in %s", path, k.Line, k.Value, what)
		}
		seen[k.Value] = true
	}
	return nil
}

// field is the value of key in mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// ReadSuites reads the suites at paths: YAML files, and directories
// searched recursively for *.yaml and *.yml files that hold a suite (a
// mapping with cases). Every problem is an InputError with its file and
// line.
func ReadSuites(kinds *Kinds, paths ...string) ([]*Suite, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, &InputError{err}
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
				return nil
			}
			isSuite, err := looksLikeSuite(path)
			if isSuite {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			return nil, &InputError{err}
		}
	}
	if len(files) == 0 {
		return nil, &InputError{fmt.Errorf("no suites in %s: a suite is a YAML file with cases", strings.Join(paths, ", "))}
	}
	var suites []*Suite
	var errs []error
	for _, f := range files {
		s, err := readSuite(kinds, f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		suites = append(suites, s)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &InputError{err}
	}
	return suites, nil
}

// looksLikeSuite reports whether the YAML file at path is a suite: a
// mapping with a cases key. In a directory, the manifests and reviews a
// suite names sit beside it; they are not suites.
func looksLikeSuite(path string) (bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil || len(doc.Content) == 0 {
		// Not YAML a suite could be; a manifest that does not parse is
		// the suite's to report, when one names it.
		return false, nil
	}
	root := doc.Content[0]
	return root.Kind == yaml.MappingNode && field(root, "cases") != nil, nil
}

func readSuite(kinds *Kinds, path string) (*Suite, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty suite", path)
	}
	root := doc.Content[0]
	if err := checkFields(path, root, "a suite", suiteFields); err != nil {
		return nil, err
	}
	var sf suiteFile
	if err := root.Decode(&sf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Suite{Path: path}
	for i := range sf.Objects {
		objs, err := readObjects(kinds, path, &sf.Objects[i])
		if err != nil {
			return nil, err
		}
		s.Objects = append(s.Objects, objs...)
	}
	cases := field(root, "cases")
	if cases.Kind != yaml.SequenceNode || len(cases.Content) == 0 {
		return nil, fmt.Errorf("%s:%d: cases must be a list of at least one case", path, cases.Line)
	}
	names := map[string]int{}
	for i, node := range cases.Content {
		cf := &sf.Cases[i]
		cf.line = node.Line
		c, err := readCase(kinds, path, node, cf)
		if err != nil {
			return nil, err
		}
		if line, dup := names[c.Name]; dup {
			return nil, fmt.Errorf("%s:%d: case %q: a case of that name is at line %d", path, c.Line, c.Name, line)
		}
		names[c.Name] = c.Line
		s.Cases = append(s.Cases, c)
	}
	return s, nil
}

func readCase(kinds *Kinds, path string, node *yaml.Node, cf *caseFile) (*Case, error) {
	at := func(n *yaml.Node, format string, args ...any) error {
		line := cf.line
		if n != nil {
			line = n.Line
		}
		return fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
	}
	if err := checkFields(path, node, "a case", caseFields); err != nil {
		return nil, err
	}
	// The objects are read as they are written: a file name or a mapping.
	cf.Object, cf.OldObject, cf.Review = field(node, "object"), field(node, "oldObject"), field(node, "review")
	if cf.Name == "" {
		return nil, at(nil, "a case needs a name")
	}
	c := &Case{Name: cf.Name, Line: cf.line}
	expect := field(node, "expect")
	if expect == nil {
		return nil, at(nil, "case %q: no expect: say what the outcome must be", cf.Name)
	}
	if err := checkFields(path, expect, "expect", expectFields); err != nil {
		return nil, err
	}
	cf.Expect.Patched = field(expect, "patched")
	var err error
	if c.Expect, err = readExpect(kinds, path, expect, &cf.Expect); err != nil {
		return nil, err
	}
	if cf.Review != nil {
		if cf.Object != nil || cf.OldObject != nil || cf.Operation != "" || cf.Namespace != "" || cf.User != "" || cf.Groups != nil || cf.DryRun {
			return nil, at(cf.Review, "case %q: a review is the whole request; give no object, oldObject, operation, namespace, user, groups or dryRun beside it", cf.Name)
		}
		raw, err := document(path, cf.Review)
		if err != nil {
			return nil, err
		}
		var review admissionv1.AdmissionReview
		if err := sigsyaml.UnmarshalStrict(raw, &review); err != nil {
			return nil, at(cf.Review, "case %q: review: %v", cf.Name, err)
		}
		if review.Request == nil {
			return nil, at(cf.Review, "case %q: the review has no request", cf.Name)
		}
		c.Review = &review
		return c, nil
	}
	if cf.Object == nil {
		return nil, at(nil, "case %q: give an object or a review", cf.Name)
	}
	op := admission.Operation(cmp.Or(cf.Operation, string(admission.Create)))
	if !slices.Contains(Operations, op) {
		return nil, at(field(node, "operation"), "case %q: operation %q: want CREATE, UPDATE, DELETE or CONNECT", cf.Name, cf.Operation)
	}
	r := &Request{Operation: op, Namespace: cf.Namespace, DryRun: cf.DryRun, User: User(cf.User, cf.Groups)}
	if len(cf.Groups) > 0 && cf.User == "" {
		return nil, at(field(node, "groups"), "case %q: groups need a user", cf.Name)
	}
	if r.Object, err = readObject(kinds, path, cf.Object); err != nil {
		return nil, err
	}
	if cf.OldObject != nil {
		if r.Old, err = readObject(kinds, path, cf.OldObject); err != nil {
			return nil, err
		}
	}
	if op == admission.Update && r.Old == nil {
		return nil, at(nil, "case %q: an UPDATE needs oldObject, the object as stored", cf.Name)
	}
	if op != admission.Update && r.Old != nil {
		return nil, at(cf.OldObject, "case %q: oldObject goes with UPDATE, not %s", cf.Name, op)
	}
	c.Request = r
	return c, nil
}

func readExpect(kinds *Kinds, path string, node *yaml.Node, ef *expectFile) (Expect, error) {
	e := Expect{Outcome: Outcome(ef.Outcome), DeniedBy: ef.DeniedBy}
	if !slices.Contains([]Outcome{Allowed, Warned, Denied}, e.Outcome) {
		return e, fmt.Errorf("%s:%d: expect.outcome %q: want allowed, warned or denied", path, node.Line, ef.Outcome)
	}
	if len(e.DeniedBy) > 0 && e.Outcome != Denied {
		return e, fmt.Errorf("%s:%d: expect.deniedBy goes with outcome denied", path, field(node, "deniedBy").Line)
	}
	if len(ef.Messages) > 0 && e.Outcome != Denied {
		return e, fmt.Errorf("%s:%d: expect.messages are the refusal's: they go with outcome denied", path, field(node, "messages").Line)
	}
	if len(ef.Warnings) > 0 && e.Outcome == Allowed {
		return e, fmt.Errorf("%s:%d: expect.warnings with outcome allowed, which has none: did you mean warned?", path, field(node, "warnings").Line)
	}
	compile := func(key string, exprs []string) ([]*regexp.Regexp, error) {
		var out []*regexp.Regexp
		for _, s := range exprs {
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: expect.%s %q: %w", path, field(node, key).Line, key, s, err)
			}
			out = append(out, re)
		}
		return out, nil
	}
	var err error
	if e.Messages, err = compile("messages", ef.Messages); err != nil {
		return e, err
	}
	if e.Warnings, err = compile("warnings", ef.Warnings); err != nil {
		return e, err
	}
	if ef.Patched != nil {
		if e.Patched, err = readObject(kinds, path, ef.Patched); err != nil {
			return e, err
		}
	}
	return e, nil
}

// document is the JSON of a suite's object: the file a string names,
// relative to the suite, or the mapping written inline.
func document(suite string, n *yaml.Node) ([]byte, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		file := n.Value
		if !filepath.IsAbs(file) {
			file = filepath.Join(filepath.Dir(suite), file)
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", suite, n.Line, err)
		}
		return raw, nil
	case yaml.MappingNode:
		var v map[string]any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", suite, n.Line, err)
		}
		return json.Marshal(v)
	default:
		return nil, fmt.Errorf("%s:%d: want a file name or an object", suite, n.Line)
	}
}

// readObject decodes the one object n names or holds.
func readObject(kinds *Kinds, suite string, n *yaml.Node) (runtime.Object, error) {
	raw, err := document(suite, n)
	if err != nil {
		return nil, err
	}
	obj, err := kinds.DecodeOne(raw)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %s: %w", suite, n.Line, describe(n), err)
	}
	return obj, nil
}

// readObjects decodes the objects n names or holds.
func readObjects(kinds *Kinds, suite string, n *yaml.Node) ([]runtime.Object, error) {
	raw, err := document(suite, n)
	if err != nil {
		return nil, err
	}
	objs, err := kinds.decodeObjects(raw)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %s: %w", suite, n.Line, describe(n), err)
	}
	return objs, nil
}

// decodeObjects decodes every object of raw, a YAML stream of objects
// or of v1 Lists, as kubectl get -o yaml writes them.
func (k *Kinds) decodeObjects(raw []byte) ([]runtime.Object, error) {
	docs, err := documents(raw)
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	for _, doc := range docs {
		var list struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := sigsyaml.Unmarshal(doc, &list); err == nil && list.Kind == "List" {
			for _, item := range list.Items {
				obj, err := k.Decode(item)
				if err != nil {
					return nil, err
				}
				out = append(out, obj)
			}
			continue
		}
		obj, err := k.Decode(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// describe names what a node is, for an error: the file, or "inline".
func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return "the inline object"
}

// User is the user a policy command makes a request as: name in groups
// and system:authenticated, as impersonation makes it; without a name,
// the admin trustplane init writes a kubeconfig for.
func User(name string, groups []string) user.Info {
	if name == "" {
		for _, id := range datadir.Identities() {
			if id.File == "admin" {
				return &user.DefaultInfo{Name: id.User, Groups: append(id.Groups, user.AllAuthenticated)}
			}
		}
	}
	groups = slices.Clone(groups)
	if name != user.Anonymous && !slices.Contains(groups, user.AllAuthenticated) {
		groups = append(groups, user.AllAuthenticated)
	}
	return &user.DefaultInfo{Name: name, Groups: groups}
}
