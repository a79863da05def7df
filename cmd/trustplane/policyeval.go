package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/admission/opa/policytest"
	"github.com/trustplane/trustplane/datadir"
)

// policyEvalFlags are the flags of `trustplane policy eval`.
type policyEvalFlags struct {
	dir       string
	object    string
	old       string
	objects   []string
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

Policies that read other objects (data.kubernetes) read those of the
files --objects names, as the server reads its replicated objects:
kubectl get namespaces,serviceaccounts -A -o yaml writes such a file.

It prints each policy's decision (its deny and warn messages, its patch),
then the outcome and the Warning headers the client would get; --explain
adds OPA's trace of the evaluation. No value of a Secret's (or a
ConfigMap's) data appears in anything printed: it is shown as <redacted>.

Exit status: 0 allowed, 1 denied, 2 bad input.`,
		Example: `  trustplane policy eval --object secret.yaml -n prod
  trustplane policy eval --object new.yaml --old old.yaml --operation UPDATE ./policies
  trustplane policy eval --object pod.yaml --as alice --as-group dev --explain
  trustplane policy eval --object secret.yaml --objects <(kubectl get ns,sa -A -o yaml)`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return badInput(err)
			}
			kinds, err := policytest.NewKinds()
			if err != nil {
				return err
			}
			attrs, err := f.attributes(kinds)
			if err != nil {
				return badInput(err)
			}
			data := opa.NewData()
			for _, file := range f.objects {
				if err := kinds.ReplicateFile(cmd.Context(), data, file); err != nil {
					return badInput(err)
				}
			}
			set, err := data.LoadDirs(cmd.Context(), policyPaths(args, f.dir)...)
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
	flags.StringArrayVar(&f.objects, "objects", nil, "file of objects that exist in the cluster (namespaces, ServiceAccounts), which the policies read as data.kubernetes; repeat for more")
	flags.BoolVar(&f.explain, "explain", false, "add OPA's trace of the evaluation, with Secret data redacted")
	flags.StringVarP(&f.output, "output", "o", f.output, "output format: text or json")
	flags.DurationVar(&f.timeout, "timeout", f.timeout, "time limit of each evaluation, as the server's --admission-policy-timeout")
	return cmd
}

// attributes are the admission attributes of the request, built as the
// server's write path builds them (policytest.Kinds.Attributes).
func (f *policyEvalFlags) attributes(kinds *policytest.Kinds) (admission.Attributes, error) {
	obj, err := readObject(kinds, f.object)
	if err != nil {
		return nil, err
	}
	var old runtime.Object
	if f.old != "" {
		if old, err = readObject(kinds, f.old); err != nil {
			return nil, err
		}
	}
	return kinds.Attributes(policytest.Request{
		Operation: admission.Operation(f.operation),
		Object:    obj,
		Old:       old,
		Namespace: f.namespace,
		User:      policytest.User(f.as, f.asGroups),
	})
}

// readObject decodes the one Kubernetes object of the file at path.
func readObject(kinds *policytest.Kinds, path string) (runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj, err := kinds.DecodeOne(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, nil
}
