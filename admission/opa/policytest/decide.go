package policytest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"

	"github.com/trustplane/trustplane/admission/opa"
)

// Outcome is what the server would answer a request.
type Outcome string

const (
	Allowed Outcome = "allowed"
	// Warned is allowed, with Warning headers.
	Warned Outcome = "warned"
	Denied Outcome = "denied"
)

// Decision is one policy's decision, as shown to its author.
type Decision struct {
	Policy      string          `json:"policy"`
	Enforcement opa.Enforcement `json:"enforcement"`
	Deny        []string        `json:"deny,omitempty"`
	Warn        []string        `json:"warn,omitempty"`
	// Patch is the JSONPatch operations the policy applies to the object.
	Patch []any `json:"patch,omitempty"`
}

// Result is the decision of the policies on one request, every string of
// it redacted (opa.Redactor): no value of the data of the request's
// objects appears in it as the input carries it, decoded or quoted, and
// the trace shows nothing computed from one. The deny and warn messages
// and the patches are the policies' own output, shown as the server
// sends and applies them: a policy that writes a transformed value (its
// upper case, a part of it) into one of them shows that.
type Result struct {
	Outcome Outcome `json:"outcome"`
	// DeniedBy are the policies that refuse the request.
	DeniedBy []string `json:"deniedBy,omitempty"`
	// Message is the server's refusal, as the client would read it.
	Message string `json:"message,omitempty"`
	// Warnings are the Warning headers the client would get.
	Warnings []string `json:"warnings,omitempty"`
	// Error is why the policies could not be evaluated, which the server
	// keeps from the client: the server refuses such a request. Where the
	// input holds data to hide, it is OPA's error code and location only.
	Error string `json:"error,omitempty"`
	// Decisions are every policy's: its deny and warn messages for the
	// object as validated, after the patches; its patch for the object as
	// the request sent it.
	Decisions []Decision `json:"decisions"`
	// Trace is OPA's trace of each evaluation, with Explain.
	Trace string `json:"trace,omitempty"`
}

// DecideOptions say how to decide.
type DecideOptions struct {
	// Explain adds OPA's trace of the evaluations.
	Explain bool
	// Timeout bounds each evaluation, as on the server; 0 is
	// opa.DefaultTimeout. A traced evaluation, slower, is bounded by ctx
	// only.
	Timeout time.Duration
}

// Decide decides a as the API server would: the policies' patches are
// applied to a's object in the mutating stage, then the patched object is
// judged by their deny and warn rules in the validating stage, each stage
// run by the server's own plugin (opa.Plugin), and every decision shown.
// An error is a request that cannot be made into an admission input; a
// policy that cannot be evaluated denies, as on the server.
func Decide(ctx context.Context, set *opa.Set, a admission.Attributes, o DecideOptions) (*Result, error) {
	timeout := cmp.Or(o.Timeout, opa.DefaultTimeout)
	plugin, err := opa.NewPlugin(set, timeout, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	res := &Result{Outcome: Allowed}
	input, err := opa.Input(a)
	if err != nil {
		return nil, err
	}
	inputs := []ast.Value{input}
	// evalErr is why the policies could not be evaluated, if they could not.
	var evalErr error
	// Every string of res is redacted before Decide returns.
	defer func() { res.redact(opa.NewRedactor(inputs...), evalErr) }()

	mutating, trace, evalErr := evaluate(ctx, set, input, o, timeout)
	res.Trace = trace
	if err := plugin.Admit(ctx, a, nil); err != nil {
		res.refuse(err, merge(mutating, mutating))
		return res, nil
	}
	validating := mutating
	if patches(mutating) {
		input, err := opa.Input(a)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, input)
		var trace string
		validating, trace, evalErr = evaluate(ctx, set, input, o, timeout)
		if o.Explain {
			res.Trace = "mutating admission:\n" + res.Trace + "\nvalidating admission, after the patches:\n" + trace
		}
	}
	warnings := &recorder{}
	err = plugin.Validate(warning.WithWarningRecorder(ctx, warnings), a, nil)
	res.Warnings = warnings.list
	decisions := merge(mutating, validating)
	switch {
	case err != nil:
		res.refuse(err, decisions)
		for _, d := range decisions {
			if d.Enforcement == opa.Deny && len(d.Deny) > 0 {
				res.DeniedBy = append(res.DeniedBy, d.Policy)
			}
		}
	case len(res.Warnings) > 0:
		res.Outcome, res.Decisions = Warned, decisions
	default:
		res.Decisions = decisions
	}
	return res, nil
}

// evaluate is one evaluation of the decisions shown, with its trace when
// explaining.
func evaluate(ctx context.Context, set *opa.Set, input ast.Value, o DecideOptions, timeout time.Duration) ([]opa.Decision, string, error) {
	if o.Explain {
		return set.Explain(ctx, input)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	decisions, err := set.Eval(ctx, input)
	return decisions, "", err
}

// patches reports whether the mutating stage patches the object.
func patches(decisions []opa.Decision) bool {
	for _, d := range decisions {
		if d.Enforcement != opa.DryRun && len(d.Patch) > 0 {
			return true
		}
	}
	return false
}

// refuse records the server's refusal err.
func (r *Result) refuse(err error, decisions []Decision) {
	r.Outcome, r.Message, r.Decisions = Denied, err.Error(), decisions
}

// merge is each policy's decision: deny and warn from the validating
// stage, patch from the mutating one.
func merge(mutating, validating []opa.Decision) []Decision {
	patch := map[string][]any{}
	for _, d := range mutating {
		patch[d.Policy] = d.Patch
	}
	out := make([]Decision, 0, len(validating))
	for _, d := range validating {
		out = append(out, Decision{Policy: d.Policy, Enforcement: d.Enforcement, Deny: d.Deny, Warn: d.Warn, Patch: patch[d.Policy]})
	}
	return out
}

// redact redacts every string of r, and sets its Error from evalErr. An
// evaluation error's message may quote values computed from the input
// (a builtin's argument): where the input holds data to hide, only its
// code and location are shown, as the server logs it.
func (r *Result) redact(red *opa.Redactor, evalErr error) {
	var te *topdown.Error
	switch {
	case evalErr == nil:
	case !red.Empty() && errors.As(evalErr, &te):
		r.Error = fmt.Sprintf("%s: %s", te.Location, te.Code)
	default:
		r.Error = evalErr.Error()
	}
	r.Message, r.Error, r.Trace = red.String(r.Message), red.String(r.Error), red.String(r.Trace)
	r.Warnings = red.Strings(r.Warnings)
	for i := range r.Decisions {
		d := &r.Decisions[i]
		d.Deny, d.Warn = red.Strings(d.Deny), red.Strings(d.Warn)
		for j, op := range d.Patch {
			d.Patch[j] = red.Value(op)
		}
	}
}

// recorder records the Warning headers of a request.
type recorder struct {
	mu   sync.Mutex
	list []string
}

func (w *recorder) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// WriteText writes r for a person: each policy's decision, then the
// outcome, then the trace.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, d := range r.Decisions {
		fmt.Fprintf(&b, "%s [%s]\n", d.Policy, d.Enforcement)
		for _, m := range d.Deny {
			fmt.Fprintf(&b, "  deny: %s\n", m)
		}
		for _, m := range d.Warn {
			fmt.Fprintf(&b, "  warn: %s\n", m)
		}
		for _, op := range d.Patch {
			var j strings.Builder
			enc := json.NewEncoder(&j)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(op); err != nil {
				return err
			}
			fmt.Fprintf(&b, "  patch: %s", j.String())
		}
	}
	switch r.Outcome {
	case Denied:
		if len(r.DeniedBy) > 0 {
			fmt.Fprintf(&b, "denied by %s\n", strings.Join(r.DeniedBy, ", "))
		} else {
			b.WriteString("denied\n")
		}
		fmt.Fprintf(&b, "  message: %s\n", r.Message)
		if r.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", r.Error)
		}
	case Warned:
		b.WriteString("allowed with warnings\n")
	default:
		b.WriteString("allowed\n")
	}
	for _, m := range r.Warnings {
		fmt.Fprintf(&b, "  Warning: %s\n", m)
	}
	if r.Trace != "" {
		fmt.Fprintf(&b, "\ntrace:\n%s", r.Trace)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes r as one JSON object.
func (r *Result) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// writeJSON writes v as one indented JSON object, as the policy commands
// print their results: with <, > and & as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
