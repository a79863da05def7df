package policytest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"go.yaml.in/yaml/v3"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/admission"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/audit"
)

// RecordedSuite is the name of the suite Record writes in its directory.
const RecordedSuite = "recorded.yaml"

// RecordOptions say which audit logs to record, and where.
type RecordOptions struct {
	// AuditLogs are files of audit.k8s.io/v1 events, one JSON object a
	// line, as the API server writes them.
	AuditLogs []string
	// Out is the directory the suite and its reviews are written to; it
	// must not hold a recorded suite already.
	Out string
	// Objects are files of objects that existed in the cluster while the
	// log was written (kubectl get namespaces,serviceaccounts -A -o
	// yaml): the suite's objects, the policies' replicated data on
	// replay. The log does not say what existed before it began.
	Objects []string
}

// Recording is what Record made of the logs.
type Recording struct {
	// Suite is the path of the suite written.
	Suite string
	// Cases counts the cases recorded, by outcome.
	Cases map[Outcome]int
	// Skipped counts the events that could not be made into a case, by
	// why.
	Skipped map[string]int
}

// policyAnnotation is the prefix of the audit annotations in which the
// API server records each policy's decision (opa.Plugin.Validate).
const policyAnnotation = "policy.trustplane.io/"

// Why an event is not a case.
const (
	skipNoBody      = "no request body: recorded below level RequestResponse (Secrets never are)"
	skipSubresource = "a subresource or deletecollection"
	skipKind        = "a kind trustplane does not serve"
	skipNotAdmitted = "refused before the policies decided, or by something else (authorization, another admission plugin, validation, a conflict)"
	skipNoOld       = "an update, patch or delete of an object whose stored state is not in the log"
	skipApply       = "a refused server-side apply: the object it would have made is not in the log"
	skipUndecodable = "a body that does not decode as its kind"
)

// Record turns the audit events of o.AuditLogs recorded at level
// RequestResponse into AdmissionReview fixtures (reviews/*.json, built
// by the server's own input builder) and a suite (recorded.yaml) whose
// cases expect the outcome the server gave: allowed, warned with its
// warnings, or denied by the policies with their messages. Replayed with
// `policy verify`, it shows what a change to the policies would change.
//
// An event becomes a case when its request reached the policies and its
// object can be rebuilt: a create from its request body; an update from
// its body and the object as the log last saw it stored; a patch from its
// response (allowed) or its patch applied to the stored object (refused);
// a delete from the stored object. Others are counted in Skipped, by why.
func Record(o RecordOptions) (*Recording, error) {
	if len(o.AuditLogs) == 0 {
		return nil, &InputError{errors.New("no audit logs given")}
	}
	if o.Out == "" {
		return nil, &InputError{errors.New("no output directory given")}
	}
	suitePath := filepath.Join(o.Out, RecordedSuite)
	if _, err := os.Stat(suitePath); err == nil {
		return nil, &InputError{fmt.Errorf("%s exists: record into a new directory", suitePath)}
	}
	kinds, err := NewKinds()
	if err != nil {
		return nil, err
	}
	var objects []string
	for _, f := range o.Objects {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, &InputError{err}
		}
		// Read once: it may be a pipe, <(kubectl get …).
		objs, err := kinds.decodeObjects(raw)
		if err != nil {
			return nil, &InputError{fmt.Errorf("%s: %w", f, err)}
		}
		if len(objs) == 0 {
			return nil, &InputError{fmt.Errorf("%s: no objects", f)}
		}
		objects = append(objects, string(raw))
	}
	r := &logReader{kinds: kinds, stored: map[string][]byte{}, rec: &Recording{Suite: suitePath, Cases: map[Outcome]int{}, Skipped: map[string]int{}}}
	for _, f := range o.AuditLogs {
		if err := r.readLog(f); err != nil {
			return nil, err
		}
	}
	if len(r.cases) == 0 {
		return r.rec, &InputError{fmt.Errorf("no event of %s could be made into a case", strings.Join(o.AuditLogs, ", "))}
	}
	// What is written may carry the bodies of what the log recorded:
	// kept as private as the log.
	if err := os.MkdirAll(filepath.Join(o.Out, "reviews"), 0o700); err != nil {
		return nil, err
	}
	suite := map[string]any{}
	if len(objects) > 0 {
		if err := os.WriteFile(filepath.Join(o.Out, "objects.yaml"), []byte(strings.Join(objects, "\n---\n")), 0o600); err != nil {
			return nil, err
		}
		suite["objects"] = []string{"objects.yaml"}
	}
	var cases []map[string]any
	for _, c := range r.cases {
		if err := os.WriteFile(filepath.Join(o.Out, c.review), c.json, 0o600); err != nil {
			return nil, err
		}
		cases = append(cases, map[string]any{"name": c.name, "review": c.review, "expect": c.expect})
	}
	suite["cases"] = cases
	out, err := yaml.Marshal(suite)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# Recorded by trustplane policy record from %s: each case expects\n# the outcome the API server gave. Replay: trustplane policy verify %s --policies DIR\n", strings.Join(o.AuditLogs, ", "), o.Out)
	if err := os.WriteFile(suitePath, append([]byte(header), out...), 0o600); err != nil {
		return nil, err
	}
	return r.rec, nil
}

// logReader reads events in order, keeping the last stored state of each
// object the log shows.
type logReader struct {
	kinds *Kinds
	// stored is each object's JSON as the log last saw it stored, by
	// resource, namespace and name.
	stored map[string][]byte
	cases  []recordedCase
	rec    *Recording
}

type recordedCase struct {
	name, review string
	json         []byte
	expect       map[string]any
}

func (r *logReader) readLog(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return &InputError{err}
	}
	defer f.Close()
	lines := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := lines.ReadBytes('\n')
		// The log's signed checkpoints are not events.
		if len(strings.TrimSpace(string(line))) > 0 && !audit.IsCheckpoint(line) {
			var ev auditv1.Event
			if jerr := json.Unmarshal(line, &ev); jerr != nil {
				return &InputError{fmt.Errorf("%s:%d: not an audit event: %w", path, n, jerr)}
			}
			if ev.Kind != "Event" || ev.APIVersion != auditv1.SchemeGroupVersion.String() {
				return &InputError{fmt.Errorf("%s:%d: not an audit.k8s.io/v1 Event", path, n)}
			}
			if why := r.event(&ev); why != "" {
				r.rec.Skipped[why]++
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &InputError{fmt.Errorf("%s: %w", path, err)}
		}
	}
}

// event records ev as a case, or says why it cannot.
func (r *logReader) event(ev *auditv1.Event) string {
	op, write := map[string]admission.Operation{"create": admission.Create, "update": admission.Update, "patch": admission.Update, "delete": admission.Delete}[ev.Verb]
	if ev.Stage != auditv1.StageResponseComplete || ev.ObjectRef == nil || (!write && ev.Verb != "deletecollection") {
		// Not a write of one object that completed: nothing to say.
		return ""
	}
	ref := ev.ObjectRef
	if ref.Subresource != "" || ev.Verb == "deletecollection" {
		return skipSubresource
	}
	res, ok := r.kinds.registry.Lookup(ref.APIGroup, ref.APIVersion, ref.Resource)
	if !ok {
		return skipKind
	}
	// The audit reference of a Namespace names it as its namespace too.
	namespace := ref.Namespace
	if !res.Namespaced {
		namespace = ""
	}
	key := storedKey(ref, namespace, ref.Name)
	code := int32(0)
	if ev.ResponseStatus != nil {
		code = ev.ResponseStatus.Code
	}
	allowed := code >= 200 && code < 300
	if allowed {
		// The log's view of the object moves on, whatever becomes of
		// the case.
		defer func() {
			switch {
			case op == admission.Delete:
				delete(r.stored, key)
			case ev.ResponseObject != nil && kindOf(ev.ResponseObject.Raw) == res.Kind:
				r.stored[storedKey(ref, namespace, nameOf(ev.ResponseObject.Raw))] = ev.ResponseObject.Raw
			}
		}()
	}
	if ev.Level != auditv1.LevelRequestResponse || (op != admission.Delete && ev.RequestObject == nil) {
		return skipNoBody
	}
	expect, why := expectation(ev, allowed, code)
	if why != "" {
		return why
	}
	var objJSON, oldJSON []byte
	switch ev.Verb {
	case "create":
		objJSON = ev.RequestObject.Raw
	case "update":
		objJSON, oldJSON = ev.RequestObject.Raw, r.stored[key]
	case "patch":
		oldJSON = r.stored[key]
		switch {
		case allowed && ev.ResponseObject != nil:
			objJSON = ev.ResponseObject.Raw
		case oldJSON == nil:
		case kindOf(ev.RequestObject.Raw) == res.Kind:
			return skipApply
		default:
			var err error
			if objJSON, err = r.applyPatch(res, oldJSON, ev.RequestObject.Raw); err != nil {
				return skipUndecodable
			}
		}
		if objJSON == nil {
			return skipNoOld
		}
	case "delete":
		objJSON = r.stored[key]
	}
	if objJSON == nil || (op == admission.Update && oldJSON == nil) {
		if ev.Verb == "create" {
			return skipNoBody
		}
		return skipNoOld
	}
	decode := func(raw []byte) (runtime.Object, error) {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		m["apiVersion"], m["kind"] = res.GVK().GroupVersion().String(), res.Kind
		doc, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return r.kinds.Decode(doc)
	}
	req := Request{Operation: op, Namespace: namespace, User: eventUser(ev), DryRun: slices.Contains(dryRunOf(ev.RequestURI), "All")}
	var err error
	if req.Object, err = decode(objJSON); err != nil {
		return skipUndecodable
	}
	if oldJSON != nil {
		if req.Old, err = decode(oldJSON); err != nil {
			return skipUndecodable
		}
	}
	if ev.Verb == "create" && ev.ResponseObject != nil && kindOf(ev.ResponseObject.Raw) == res.Kind {
		// The name the server generated, if it did.
		if accessor, err := meta.Accessor(req.Object); err == nil && accessor.GetName() == "" {
			accessor.SetName(nameOf(ev.ResponseObject.Raw))
		}
	}
	attrs, err := r.kinds.Attributes(req)
	if err != nil {
		return skipUndecodable
	}
	review, err := reviewJSON(attrs, string(ev.AuditID))
	if err != nil {
		return skipUndecodable
	}
	n := len(r.cases) + 1
	name := fmt.Sprintf("%04d %s %s %s by %s", n, ev.Verb, ref.Resource, strings.TrimPrefix(namespace+"/"+attrs.GetName(), "/"), attrs.GetUserInfo().GetName())
	file := fmt.Sprintf("reviews/%04d-%s-%s.json", n, ev.Verb, ref.Resource)
	r.cases = append(r.cases, recordedCase{name: name, review: file, json: review, expect: expect})
	r.rec.Cases[Outcome(expect["outcome"].(string))]++
	return ""
}

// expectation is the outcome the server gave ev, as a case expects it,
// or why the event says nothing of the policies.
func expectation(ev *auditv1.Event, allowed bool, code int32) (map[string]any, string) {
	var deniedBy, messages, warnings []string
	for _, k := range slices.Sorted(maps.Keys(ev.Annotations)) {
		policy, ok := strings.CutPrefix(k, policyAnnotation)
		if !ok || strings.Contains(policy, "/") || policy == "patched" {
			continue
		}
		var d struct {
			Enforcement opa.Enforcement `json:"enforcement"`
			Deny        []string        `json:"deny"`
			Warn        []string        `json:"warn"`
		}
		if err := json.Unmarshal([]byte(ev.Annotations[k]), &d); err != nil {
			continue
		}
		// As the plugin turns decisions into refusals and warnings.
		switch d.Enforcement {
		case opa.Deny:
			if len(d.Deny) > 0 {
				deniedBy = append(deniedBy, policy)
				messages = append(messages, "policy "+policy+": "+strings.Join(d.Deny, "; "))
			}
		case opa.Warn:
			for _, m := range d.Deny {
				warnings = append(warnings, fmt.Sprintf("policy %s would deny: %s", policy, m))
			}
		}
		if d.Enforcement != opa.DryRun {
			for _, m := range d.Warn {
				warnings = append(warnings, fmt.Sprintf("policy %s: %s", policy, m))
			}
		}
	}
	quote := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = regexp.QuoteMeta(s)
		}
		return out
	}
	switch {
	case allowed && len(deniedBy) == 0 && len(warnings) == 0:
		return map[string]any{"outcome": string(Allowed)}, ""
	case allowed && len(deniedBy) == 0:
		return map[string]any{"outcome": string(Warned), "warnings": quote(warnings)}, ""
	case code == 403 && len(deniedBy) > 0:
		return map[string]any{"outcome": string(Denied), "deniedBy": deniedBy, "messages": quote(messages)}, ""
	default:
		return nil, skipNotAdmitted
	}
}

// applyPatch applies a refused patch to the stored object: a JSON patch
// (a list of operations) or a strategic merge patch, which is what
// kubectl sends for a built-in kind otherwise. A merge patch of a
// built-in kind is, field for field, a strategic merge patch that
// replaces lists; the difference cannot be told from the log.
func (r *logReader) applyPatch(res *registry.Resource, old, patch []byte) ([]byte, error) {
	if strings.HasPrefix(strings.TrimSpace(string(patch)), "[") {
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, err
		}
		return p.Apply(old)
	}
	obj, err := r.kinds.scheme.New(res.GVK())
	if err != nil {
		return nil, err
	}
	return strategicpatch.StrategicMergePatch(old, patch, obj)
}

// reviewJSON is the AdmissionReview the server builds for attrs, with
// the audit ID of the request it was recorded from as its uid.
func reviewJSON(attrs admission.Attributes, uid string) ([]byte, error) {
	input, err := opa.Input(attrs)
	if err != nil {
		return nil, err
	}
	v, err := ast.JSON(input)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		if req, ok := m["request"].(map[string]any); ok && uid != "" {
			req["uid"] = uid
		}
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// eventUser is who made the request: the impersonated user, if any.
func eventUser(ev *auditv1.Event) user.Info {
	u := ev.User
	if ev.ImpersonatedUser != nil {
		u = *ev.ImpersonatedUser
	}
	return userOf(u)
}

// storedKey names an object in the logReader's view of what is stored.
func storedKey(ref *auditv1.ObjectReference, namespace, name string) string {
	return ref.Resource + "." + ref.APIGroup + "/" + namespace + "/" + name
}

// kindOf is the kind a JSON object says it is; "" if it does not.
func kindOf(raw []byte) string {
	var m struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Kind
}

// nameOf is the name of a JSON object.
func nameOf(raw []byte) string {
	var m struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Metadata.Name
}

// dryRunOf is the dryRun parameters of a request URI.
func dryRunOf(uri string) []string {
	u, err := url.Parse(uri)
	if err != nil {
		return nil
	}
	return u.Query()["dryRun"]
}
