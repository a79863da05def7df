package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/admission/opa/policytest"
	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/datadir"
)

// policyEvalFlags are the flags of `trustplane policy eval`.
type policyEvalFlags struct {
	dir       string
	object    string
	old       string
	operation string
	as        string
	asGroups  []string
	namespace string
	explain   bool
	output    string
	timeout   time.Duration
}

var policyOperations = []string{string(admission.Create), string(admission.Update), string(admission.Delete), string(admission.Connect)}

func (f *policyEvalFlags) validate() error {
	var errs []error
	op := admission.Operation(f.operation)
	if !slices.Contains(policyOperations, f.operation) {
		errs = append(errs, fmt.Errorf("--operation %q: want one of %s", f.operation, strings.Join(policyOperations, ", ")))
	}
	if f.object == "" {
		errs = append(errs, errors.New("--object is required"))
	}
	if op == admission.Update && f.old == "" {
		errs = append(errs, errors.New("--operation UPDATE requires --old, the object as stored"))
	}
	if op != admission.Update && f.old != "" {
		errs = append(errs, fmt.Errorf("--old goes with --operation UPDATE, not %s", f.operation))
	}
	if len(f.asGroups) > 0 && f.as == "" {
		errs = append(errs, errors.New("--as-group requires --as"))
	}
	if f.output != "text" && f.output != "json" {
		errs = append(errs, fmt.Errorf("-o %q: want text or json", f.output))
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s must be positive", f.timeout))
	}
	return errors.Join(errs...)
}

func newPolicyEvalCommand() *cobra.Command {
	f := policyEvalFlags{dir: datadir.DefaultDir, operation: string(admission.Create), output: "text", timeout: opa.DefaultTimeout}
	cmd := &cobra.Command{
		Use:   "eval --object FILE [--old FILE] [--operation OP] [--as USER] [--as-group G]... [--explain] [PATH...]",
		Short: "Decide one admission request with the policies, as the API server would",
		Long: `Decide one admission request with the policies at PATH (directories or .rego
files; without PATH, the data directory's policies/), exactly as the API
server would: the policies are loaded as the server loads them (their own
tests must pass), the object is decoded with the server's scheme and its
kind's defaults, the AdmissionReview input is the server's, the policies'
patches are applied in the mutating stage and the patched object is judged
in the validating stage, by the server's own plugin.

FILE is one Kubernetes object, YAML or JSON. With DELETE it is the object
deleted; with UPDATE, --old is the object as stored. The request is made
by --as (default: the admin of trustplane init, in group
trustplane:cluster-admins), in the groups --as-group and
system:authenticated, as impersonation makes it.

It prints each policy's decision (its deny and warn messages, its patch),
then the outcome and the Warning headers the client would get; --explain
adds OPA's trace of the evaluation. No value of a Secret's (or a
ConfigMap's) data appears in anything printed: it is shown as <redacted>.

Exit status: 0 allowed, 1 denied, 2 bad input.`,
		Example: `  trustplane policy eval --object secret.yaml -n prod
  trustplane policy eval --object new.yaml --old old.yaml --operation UPDATE ./policies
  trustplane policy eval --object pod.yaml --as alice --as-group dev --explain`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return badInput(err)
			}
			attrs, err := f.attributes()
			if err != nil {
				return badInput(err)
			}
			set, err := opa.LoadDirs(cmd.Context(), policyPaths(args, f.dir)...)
			if err != nil {
				return badInput(err)
			}
			result, err := policytest.Decide(cmd.Context(), set, attrs, policytest.DecideOptions{Explain: f.explain, Timeout: f.timeout})
			if err != nil {
				return badInput(err)
			}
			write := result.WriteText
			if f.output == "json" {
				write = result.WriteJSON
			}
			if err := write(cmd.OutOrStdout()); err != nil {
				return err
			}
			if result.Outcome == policytest.Denied {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&f.dir, "dir", f.dir, "data directory whose policies/ are used when no PATH is given")
	flags.StringVarP(&f.object, "object", "f", "", "the request's object, one Kubernetes object in YAML or JSON")
	flags.StringVar(&f.old, "old", "", "with UPDATE, the object as stored")
	flags.StringVar(&f.operation, "operation", f.operation, "admission operation: "+strings.Join(policyOperations, ", "))
	flags.StringVar(&f.as, "as", "", "user making the request (default admin, in group trustplane:cluster-admins)")
	flags.StringArrayVar(&f.asGroups, "as-group", nil, "a group of the --as user; repeat for more")
	flags.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the request (default: the object's, else default)")
	flags.BoolVar(&f.explain, "explain", false, "add OPA's trace of the evaluation, with Secret data redacted")
	flags.StringVarP(&f.output, "output", "o", f.output, "output format: text or json")
	flags.DurationVar(&f.timeout, "timeout", f.timeout, "time limit of each evaluation, as the server's --admission-policy-timeout")
	return cmd
}

// attributes are the admission attributes of the request, built as the
// server's write path builds them: the object decoded with the server's
// scheme, in the namespace of the request, with its kind's defaults and
// what the server resets on create or keeps on update.
func (f *policyEvalFlags) attributes() (admission.Attributes, error) {
	scheme, err := registry.NewScheme()
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(scheme)
	if err != nil {
		return nil, err
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	obj, gvk, err := readObject(decoder, f.object)
	if err != nil {
		return nil, err
	}
	res, ok := reg.ForKind(gvk)
	if !ok {
		return nil, fmt.Errorf("%s: kind %s is not served by trustplane", f.object, gvk)
	}
	var old runtime.Object
	if f.old != "" {
		var oldKind schema.GroupVersionKind
		if old, oldKind, err = readObject(decoder, f.old); err != nil {
			return nil, err
		}
		if oldKind != gvk {
			return nil, fmt.Errorf("--old %s is a %s, --object %s a %s", f.old, oldKind, f.object, gvk)
		}
	}
	op := admission.Operation(f.operation)
	if op == admission.Delete {
		// What a delete admits is the stored object.
		obj, old = nil, obj
	}
	var namespace, name string
	for _, o := range []runtime.Object{obj, old} {
		if o == nil {
			continue
		}
		accessor, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		ns, err := f.namespaceOf(res, accessor)
		if err != nil {
			return nil, err
		}
		if name != "" && ns != namespace {
			return nil, fmt.Errorf("--object is in namespace %q, --old in %q: an update keeps the namespace", namespace, ns)
		}
		namespace = ns
		accessor.SetNamespace(namespace)
		if accessor.GetName() == "" && op == admission.Create && accessor.GetGenerateName() != "" {
			accessor.SetName(names.SimpleNameGenerator.GenerateName(accessor.GetGenerateName()))
		}
		if name != "" && accessor.GetName() != name {
			return nil, fmt.Errorf("--object is named %q, --old %q: an update keeps the name", name, accessor.GetName())
		}
		if name = accessor.GetName(); name == "" {
			return nil, fmt.Errorf("%s: the object has no name (metadata.name or, to create, metadata.generateName)", f.object)
		}
		if res.Defaults != nil {
			res.Defaults(o)
		}
	}
	var options runtime.Object
	switch op {
	case admission.Create:
		if res.PrepareCreate != nil {
			res.PrepareCreate(obj)
		}
		options = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}}
	case admission.Update:
		if res.PrepareUpdate != nil {
			res.PrepareUpdate(obj, old)
		}
		options = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}}
	case admission.Delete:
		options = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}
	}
	return admission.NewAttributesRecord(obj, old, gvk, namespace, name, res.GVR, "", op, options, false, f.user()), nil
}

// namespaceOf is the namespace of the request for an object: --namespace,
// which the object's own must agree with, else the object's, else
// default, as kubectl sends it; none for a cluster-scoped kind.
func (f *policyEvalFlags) namespaceOf(res *registry.Resource, o metav1.Object) (string, error) {
	own := o.GetNamespace()
	switch {
	case !res.Namespaced && f.namespace != "":
		return "", fmt.Errorf("--namespace %q: %s is cluster-scoped", f.namespace, res.GVR.GroupResource())
	case !res.Namespaced:
		return "", nil
	case f.namespace == "" && own == "":
		return metav1.NamespaceDefault, nil
	case f.namespace == "":
		return own, nil
	case own != "" && own != f.namespace:
		return "", fmt.Errorf("--namespace %q: the object is in namespace %q", f.namespace, own)
	default:
		return f.namespace, nil
	}
}

// user is who makes the request: --as in the groups --as-group, and
// system:authenticated as impersonation adds it; else the admin that
// trustplane init writes a kubeconfig for.
func (f *policyEvalFlags) user() user.Info {
	if f.as == "" {
		for _, id := range datadir.Identities() {
			if id.File == "admin" {
				return &user.DefaultInfo{Name: id.User, Groups: append(id.Groups, user.AllAuthenticated)}
			}
		}
	}
	groups := slices.Clone(f.asGroups)
	if f.as != user.Anonymous && !slices.Contains(groups, user.AllAuthenticated) {
		groups = append(groups, user.AllAuthenticated)
	}
	return &user.DefaultInfo{Name: f.as, Groups: groups}
}

// readObject decodes the one Kubernetes object of the file at path,
// strictly: an unknown or duplicate field is an error, as kubectl's
// default field validation makes it on the server.
func readObject(decoder runtime.Decoder, path string) (runtime.Object, schema.GroupVersionKind, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var doc []byte
	for {
		next, err := docs.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(next)) == 0 {
			continue
		}
		if doc != nil {
			return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: more than one object; give one", path)
		}
		doc = next
	}
	if doc == nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: no object", path)
	}
	obj, gvk, err := decoder.Decode(doc, nil, nil)
	if err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%s: %w", path, err)
	}
	return obj, *gvk, nil
}
