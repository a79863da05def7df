package policytest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/dynamic"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/registry"
)

// DefaultPageSize is how many objects one list request of an audit asks
// for, as kubectl's --chunk-size: a large cluster is read in pages, not
// in one response.
const DefaultPageSize = 500

// AuditOptions say what to audit, with which policies, as whom.
type AuditOptions struct {
	// Paths are the policies: directories (read recursively) or .rego
	// files, loaded as the server loads them.
	Paths []string
	// Replicate are the resources the server mirrors into the policies'
	// data.kubernetes (opa.LoadReplication); their live objects are put
	// there before any object is judged.
	Replicate []schema.GroupResource
	// Resources are the resources whose objects are judged; none: every
	// served resource but the reviews, the events.k8s.io view of Events
	// included, since a policy may be written against either kind.
	Resources []schema.GroupResource
	// Policies are the policies whose findings are reported; none: all.
	// Every policy is evaluated all the same, since each one's patches
	// change what the others judge.
	Policies []string
	// User makes each request; policies that judge the requester judge
	// this user.
	User user.Info
	// Timeout bounds each evaluation; 0 is opa.DefaultTimeout.
	Timeout time.Duration
	// PageSize is how many objects each list request asks for; 0 is
	// DefaultPageSize.
	PageSize int64
}

// AuditReport is what an audit found: every object of the audited
// resources that a policy would deny, as if every policy were enforced as
// deny. Every string of it is redacted as Decide redacts: no value of a
// Secret's or a ConfigMap's data appears in it.
type AuditReport struct {
	// User is who the requests were made as.
	User string `json:"user"`
	// Evaluated is how many objects were judged.
	Evaluated int `json:"evaluated"`
	// Findings are the objects that would be denied, one per object and
	// policy, in the order the resources and their objects were listed.
	Findings []Finding `json:"findings"`
	// Policies are, for each policy reported, how many objects it would
	// deny.
	Policies []PolicyCount `json:"policies"`
	// Errors counts the objects the policies could not decide, which the
	// server would refuse.
	Errors int `json:"errors"`
	// Skipped are the resources that could not be listed, and why.
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Finding is one object a policy would deny, or one the policies could
// not decide.
type Finding struct {
	// Resource is the object's resource, as resource[.group].
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Policy is the policy that would deny it, with its enforcement as
	// written; empty when the policies could not decide (Error).
	Policy      string          `json:"policy,omitempty"`
	Enforcement opa.Enforcement `json:"enforcement,omitempty"`
	Deny        []string        `json:"deny,omitempty"`
	// Error is why the server would refuse the object without a policy's
	// deny: the policies could not be evaluated, or their patch not
	// applied.
	Error string `json:"error,omitempty"`
}

// PolicyCount is how many of the objects judged a policy would deny.
type PolicyCount struct {
	Policy      string          `json:"policy"`
	Enforcement opa.Enforcement `json:"enforcement"`
	Denied      int             `json:"denied"`
	Evaluated   int             `json:"evaluated"`
}

// Skipped is a resource the audit could not list.
type Skipped struct {
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
}

// Denied reports whether any object would be denied by a policy
// reported, or could not be decided.
func (r *AuditReport) Denied() bool { return len(r.Findings) > 0 }

// Audit judges every live object of o.Resources, read through client,
// with the policies at o.Paths, each as a CREATE of the object as it now
// is (what re-creating it would meet) by o.User, and as if every policy
// were enforced as deny: it shows what a warn or dryrun policy would
// refuse once switched. Each finding carries the policy's enforcement as
// written. The policies read the live objects of o.Replicate as their
// data, as on the server.
//
// A resource the client may not list (403) or the server does not serve
// is skipped, with the reason. The policies' data is not: a policy that
// judged by part of it would judge wrongly, so a resource of o.Replicate
// that cannot be listed fails the audit. A policy set that does not
// parse, compile or pass its tests, and options that name what does not
// exist, are an *InputError, found before the cluster is read.
func Audit(ctx context.Context, client dynamic.Interface, o AuditOptions) (*AuditReport, error) {
	if o.User == nil {
		return nil, &InputError{errors.New("an audit needs the user that makes its requests")}
	}
	kinds, err := NewKinds()
	if err != nil {
		return nil, err
	}
	audited, err := kinds.audited(o.Resources)
	if err != nil {
		return nil, &InputError{err}
	}
	replicated, err := kinds.replicated(o.Replicate)
	if err != nil {
		return nil, &InputError{err}
	}
	data := opa.NewData()
	set, err := data.LoadDirs(ctx, o.Paths...)
	if err != nil {
		return nil, &InputError{err}
	}
	report := &AuditReport{User: o.User.GetName(), Findings: []Finding{}}
	enforcement := map[string]opa.Enforcement{}
	for _, p := range set.Policies() {
		enforcement[p.Name] = p.Enforcement
		if len(o.Policies) == 0 || slices.Contains(o.Policies, p.Name) {
			report.Policies = append(report.Policies, PolicyCount{Policy: p.Name, Enforcement: p.Enforcement})
		}
	}
	for _, name := range o.Policies {
		if _, ok := enforcement[name]; !ok {
			return nil, &InputError{fmt.Errorf("policy %q is not among the policies at %s", name, strings.Join(o.Paths, ", "))}
		}
	}

	for _, res := range replicated {
		err := kinds.list(ctx, client, res, o.PageSize, func(obj runtime.Object) error {
			return kinds.Replicate(ctx, data, obj)
		})
		if err != nil {
			return nil, fmt.Errorf("read %s, which the policies read as data.kubernetes.%s (audit as an identity that may list it): %w", res.GroupResource(), res.GVR.Resource, err)
		}
	}

	enforced := set.Enforced(opa.Deny)
	for _, res := range audited {
		err := kinds.list(ctx, client, res, o.PageSize, func(obj runtime.Object) error {
			return report.judge(ctx, kinds, enforced, res, obj, enforcement, o)
		})
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
			report.Skipped = append(report.Skipped, Skipped{Resource: res.GroupResource().String(), Reason: err.Error()})
		case err != nil:
			return nil, fmt.Errorf("audit %s: %w", res.GroupResource(), err)
		}
	}
	for i := range report.Policies {
		report.Policies[i].Evaluated = report.Evaluated
	}
	return report, nil
}

// judge decides the creation of obj, a live object of res, and records
// what would deny it.
func (r *AuditReport) judge(ctx context.Context, kinds *Kinds, set *opa.Set, res *registry.Resource, obj runtime.Object, enforcement map[string]opa.Enforcement, o AuditOptions) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	at := Finding{Resource: res.GroupResource().String(), Namespace: accessor.GetNamespace(), Name: accessor.GetName()}
	attrs, err := kinds.Attributes(Request{Operation: admission.Create, Object: obj, User: o.User})
	if err != nil {
		return fmt.Errorf("%s: %w", at.object(), err)
	}
	result, err := Decide(ctx, set, attrs, DecideOptions{Timeout: o.Timeout})
	if err != nil {
		return fmt.Errorf("%s: %w", at.object(), err)
	}
	r.Evaluated++
	if result.Outcome == Denied && len(result.DeniedBy) == 0 {
		// Refused without a policy's deny: the server refuses what its
		// policies cannot decide.
		f := at
		f.Error = result.Message
		if result.Error != "" {
			f.Error += ": " + result.Error
		}
		r.Findings = append(r.Findings, f)
		r.Errors++
	}
	for _, d := range result.Decisions {
		if len(d.Deny) == 0 {
			continue
		}
		i := slices.IndexFunc(r.Policies, func(c PolicyCount) bool { return c.Policy == d.Policy })
		if i < 0 {
			continue
		}
		r.Policies[i].Denied++
		f := at
		f.Policy, f.Enforcement, f.Deny = d.Policy, enforcement[d.Policy], d.Deny
		r.Findings = append(r.Findings, f)
	}
	return nil
}

// object names the finding's object: resource namespace/name, or
// resource name for a cluster-scoped one.
func (f Finding) object() string {
	if f.Namespace == "" {
		return f.Resource + " " + f.Name
	}
	return f.Resource + " " + f.Namespace + "/" + f.Name
}

// list calls each with every object of res, in every namespace, read
// pageSize at a time and decoded as the server decodes its kind.
func (k *Kinds) list(ctx context.Context, client dynamic.Interface, res *registry.Resource, pageSize int64, each func(runtime.Object) error) error {
	opts := metav1.ListOptions{Limit: cmp.Or(pageSize, DefaultPageSize)}
	for {
		page, err := client.Resource(res.GVR).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range page.Items {
			raw, err := page.Items[i].MarshalJSON()
			if err != nil {
				return err
			}
			obj, err := k.Decode(raw)
			if err != nil {
				return fmt.Errorf("decode %s %s/%s: %w", res.GroupResource(), page.Items[i].GetNamespace(), page.Items[i].GetName(), err)
			}
			if err := each(obj); err != nil {
				return err
			}
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// audited are the served resources of want (every one when want is
// empty), in discovery order, but the reviews: they are computed, never
// stored, and there is nothing of theirs to list. A view (events.k8s.io
// Events) is audited beside the resource it is stored as.
func (k *Kinds) audited(want []schema.GroupResource) ([]*registry.Resource, error) {
	var listed []*registry.Resource
	for _, res := range k.registry.All() {
		if res.Review == nil {
			listed = append(listed, res)
		}
	}
	if len(want) == 0 {
		return listed, nil
	}
	var errs []error
	for _, gr := range want {
		if !slices.ContainsFunc(listed, func(res *registry.Resource) bool { return res.GroupResource() == gr }) {
			errs = append(errs, fmt.Errorf("%s: not a resource trustplane stores; want one of %s", groupSlashResource(gr), strings.Join(resourceNames(listed), ", ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(listed, func(res *registry.Resource) bool { return !slices.Contains(want, res.GroupResource()) }), nil
}

// replicated are the served resources of want, which the server
// replicates: each must be stored under its own keys, as the server
// requires.
func (k *Kinds) replicated(want []schema.GroupResource) ([]*registry.Resource, error) {
	var out []*registry.Resource
	var errs []error
	for _, gr := range want {
		i := slices.IndexFunc(k.registry.Stored(), func(res *registry.Resource) bool { return res.GroupResource() == gr })
		if i < 0 {
			errs = append(errs, fmt.Errorf("%s cannot be replicated to the policies' data: it is not a stored resource", groupSlashResource(gr)))
			continue
		}
		out = append(out, k.registry.Stored()[i])
	}
	return out, errors.Join(errs...)
}

// groupSlashResource writes gr as replicate.yaml and --kinds read it.
func groupSlashResource(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource
	}
	return gr.Group + "/" + gr.Resource
}

func resourceNames(resources []*registry.Resource) []string {
	out := make([]string, len(resources))
	for i, res := range resources {
		out[i] = groupSlashResource(res.GroupResource())
	}
	return out
}

// WriteText writes r for a person: one line per object and policy that
// would deny it, the resources skipped, then how many objects each
// policy would deny.
func (r *AuditReport) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.Findings {
		if f.Policy == "" {
			fmt.Fprintf(&b, "%s: not decided, the server would refuse it: %s\n", f.object(), f.Error)
			continue
		}
		fmt.Fprintf(&b, "%s: %s [%s]: %s\n", f.object(), f.Policy, f.Enforcement, strings.Join(f.Deny, "; "))
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "skipped %s: %s\n", s.Resource, s.Reason)
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d objects evaluated, as a CREATE by %s, every policy enforced as deny:\n", r.Evaluated, r.User)
	for _, p := range r.Policies {
		fmt.Fprintf(&b, "  %s [%s]: would deny %d of %d\n", p.Policy, p.Enforcement, p.Denied, p.Evaluated)
	}
	if r.Errors > 0 {
		fmt.Fprintf(&b, "  not decided (refused): %d of %d\n", r.Errors, r.Evaluated)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes r as one JSON object.
func (r *AuditReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }
