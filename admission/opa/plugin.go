package opa

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"

	tpadmission "github.com/trustplane/trustplane/admission"
	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
)

// DefaultTimeout bounds the evaluation of the policies for one request.
const DefaultTimeout = 250 * time.Millisecond

// Plugin is the Rego admission stage: in the mutating chain it applies
// the policies' patches; in the validating chain it refuses what a deny
// policy denies, and turns warn and the messages of warn policies into
// Warning headers. Each stage evaluates the policies against the object
// as it then is, so a patched object is judged again. Anything unexpected
// (an evaluation error, a timeout, a rule that is not a set) refuses the
// request. It is safe for concurrent use; Swap replaces the policy set
// atomically.
type Plugin struct {
	*admission.Handler
	set     atomic.Pointer[Set]
	timeout time.Duration
	logger  *slog.Logger
}

var (
	_ admission.MutationInterface   = (*Plugin)(nil)
	_ admission.ValidationInterface = (*Plugin)(nil)
)

// NewPlugin returns the stage running set, each evaluation bounded by
// timeout; set and logger are required.
func NewPlugin(set *Set, timeout time.Duration, logger *slog.Logger) (*Plugin, error) {
	if set == nil || logger == nil || timeout <= 0 {
		return nil, errors.New("rego admission: a policy set, a positive timeout and a logger are required")
	}
	p := &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete, admission.Connect), timeout: timeout, logger: logger}
	p.set.Store(set)
	return p, nil
}

// Evaluates reports whether the running set has policies: whether the
// stage evaluates any for a request.
func (p *Plugin) Evaluates() bool { return len(p.set.Load().policies) > 0 }

// Swap makes set the policies of every request from now on.
func (p *Plugin) Swap(set *Set) { p.set.Store(set) }

// Admit applies the patches of the policies that are not dry runs.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	set := p.set.Load()
	obj := a.GetObject()
	if obj == nil || !set.mutates || tpadmission.IsPolicyConfigMapDeletion(a) {
		// Nothing to patch: the validating stage judges the object.
		return nil
	}
	buf := getDecisions()
	defer putDecisions(buf)
	_, decisions, err := p.eval(ctx, set, a, buf)
	if err != nil {
		return err
	}
	var ops []any
	for _, d := range decisions {
		if d.Enforcement != DryRun {
			ops = append(ops, d.Patch...)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if err := applyPatch(obj, ops); err != nil {
		p.logger.WarnContext(ctx, "rego admission: a policy patch does not apply", "resource", a.GetResource().String(), "err", err)
		return admission.NewForbidden(a, errors.New("the admission policies' patch cannot be applied to the object"))
	}
	audit.Annotate(ctx, "policy.trustplane.io/patched", "true")
	return nil
}

// Validate refuses the request if a deny policy denies it, with every
// message of every such policy.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	set := p.set.Load()
	if len(set.policies) == 0 || tpadmission.IsPolicyConfigMapDeletion(a) {
		// Nothing to judge by; an administrator removing a policy is not
		// judged by it.
		return nil
	}
	buf := getDecisions()
	defer putDecisions(buf)
	input, decisions, err := p.eval(ctx, set, a, buf)
	if err != nil {
		return err
	}
	// The messages go to the client, the audit log and Warning headers:
	// none may show the data of the object judged, whatever a policy put
	// in them. The redactor needs to hide only what the longest message
	// could hold.
	longest := -1
	for _, d := range decisions {
		for _, msg := range d.Deny {
			longest = max(longest, len(msg))
		}
		for _, msg := range d.Warn {
			longest = max(longest, len(msg))
		}
	}
	var redact *Redactor
	var refusals []string
	// A request allowed only by a grant on the object's metadata (a
	// Secret's, secrets/metadata) is told no policy's message, nor which
	// policy: a message may describe what the grant does not show (the
	// Secret's type, whether it is immutable, its data), and so may the
	// fact that a policy warns of it. It is still refused when a policy
	// denies it; the audit event records every decision as for any
	// request.
	withheld := responses.MetadataOnly(ctx)
	refusedWithheld := false
	for _, d := range decisions {
		if len(d.Deny) == 0 && len(d.Warn) == 0 {
			continue
		}
		if redact == nil {
			redact = newRedactorUpTo(longest, input)
		}
		d.Deny, d.Warn = redact.Strings(d.Deny), redact.Strings(d.Warn)
		record, _ := json.Marshal(map[string]any{"enforcement": d.Enforcement, "deny": d.Deny, "warn": d.Warn})
		audit.Annotate(ctx, "policy.trustplane.io/"+d.Policy, string(record))
		if d.Enforcement == DryRun {
			continue
		}
		if withheld {
			refusedWithheld = refusedWithheld || d.Enforcement == Deny && len(d.Deny) > 0
			continue
		}
		for _, msg := range d.Warn {
			warning.AddWarning(ctx, "", fmt.Sprintf("policy %s: %s", d.Policy, msg))
		}
		if len(d.Deny) == 0 {
			continue
		}
		if d.Enforcement == Warn {
			for _, msg := range d.Deny {
				warning.AddWarning(ctx, "", fmt.Sprintf("policy %s would deny: %s", d.Policy, msg))
			}
			continue
		}
		refusals = append(refusals, fmt.Sprintf("policy %s: %s", d.Policy, strings.Join(d.Deny, "; ")))
	}
	if refusedWithheld {
		return admission.NewForbidden(a, errors.New("the admission policies refuse the request; their messages are withheld from a request allowed by a grant on metadata only"))
	}
	if len(refusals) > 0 {
		return admission.NewForbidden(a, errors.New(strings.Join(refusals, "; ")))
	}
	return nil
}

// eval evaluates set's policies for a, within the timeout, and returns the
// input it evaluated with the decisions, written over buf's if it is not
// nil. Its error refuses the request; the cause is logged without the
// input or values from it.
func (p *Plugin) eval(ctx context.Context, set *Set, a admission.Attributes, buf *[]Decision) (ast.Value, []Decision, error) {
	if !set.appliesTo(a.GetKind().Kind, string(a.GetOperation())) && set.data.stale.Load() == 0 {
		// No decision rule can hold for this kind of object and
		// operation: an evaluation would decide nothing, and the input
		// need not be built. While the data is stale the evaluation
		// refuses, as for any request.
		return nil, nil, nil
	}
	input, err := set.Input(a)
	if err != nil {
		return nil, nil, err
	}
	var out []Decision
	if buf != nil {
		out = *buf
	}
	decisions, err := set.eval(ctx, set.queryFor(input), input, p.timeout, out)
	if err == nil {
		if buf != nil {
			*buf = decisions
		}
		return input, decisions, nil
	}
	var te *topdown.Error
	switch {
	case errors.Is(err, errStale):
		p.logger.WarnContext(ctx, "rego admission: the policies' data is being replicated afresh; refusing")
		return nil, nil, admission.NewForbidden(a, errors.New("the admission policies' data is being refreshed; try again"))
	case errors.Is(err, errBehind):
		p.logger.WarnContext(ctx, "rego admission: the policies' data did not catch up with the server's writes within the timeout; refusing", "timeout", p.timeout.String())
		return nil, nil, admission.NewForbidden(a, errors.New("the admission policies' data is catching up with a recent write; try again"))
	case errors.Is(err, errTimedOut) || ctx.Err() != nil:
		p.logger.ErrorContext(ctx, "rego admission: evaluation timed out", "timeout", p.timeout.String())
		return nil, nil, admission.NewForbidden(a, fmt.Errorf("the admission policies were not evaluated within %s", p.timeout))
	case errors.As(err, &te):
		// The message may quote values of the input; code and location
		// do not.
		p.logger.ErrorContext(ctx, "rego admission: evaluation failed", "code", te.Code, "location", te.Location.String())
	default:
		// Not an evaluation of the input: its text quotes none of it.
		p.logger.ErrorContext(ctx, "rego admission: evaluation failed", "err", err)
	}
	return nil, nil, admission.NewForbidden(a, errors.New("the admission policies could not be evaluated"))
}

// decisionBuffers are the decisions of requests the stage is done with:
// a Secret create's are a kilobyte, one per policy.
var decisionBuffers = sync.Pool{New: func() any { return new([]Decision) }}

func getDecisions() *[]Decision { return decisionBuffers.Get().(*[]Decision) }

func putDecisions(buf *[]Decision) { decisionBuffers.Put(buf) }

// applyPatch applies JSONPatch ops to obj in place. The patched object
// must decode strictly as obj's type and keep its kind, name and
// namespace.
func applyPatch(obj runtime.Object, ops []any) error {
	doc, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return err
	}
	patched, err := patch.Apply(doc)
	if err != nil {
		return err
	}
	next := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	dec := json.NewDecoder(bytes.NewReader(patched))
	dec.DisallowUnknownFields()
	if err := dec.Decode(next); err != nil {
		return err
	}
	before, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	after, err := meta.Accessor(next)
	if err != nil {
		return err
	}
	if before.GetName() != after.GetName() || before.GetNamespace() != after.GetNamespace() || obj.GetObjectKind().GroupVersionKind() != next.GetObjectKind().GroupVersionKind() {
		return errors.New("a patch may not change the object's kind, name or namespace")
	}
	// What the server sets is the server's.
	system := func(m metav1.Object) string {
		b, _ := json.Marshal([]any{m.GetUID(), m.GetResourceVersion(), m.GetCreationTimestamp(), m.GetGeneration(), m.GetManagedFields(), m.GetDeletionTimestamp(), m.GetDeletionGracePeriodSeconds()})
		return string(b)
	}
	if system(before) != system(after) {
		return errors.New("a patch may not change the object's system fields")
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(next).Elem())
	return nil
}
