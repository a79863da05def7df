package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/trustplane/trustplane/audit"
)

// decisionKey is the audit annotation holding the authorization decision.
const decisionKey = "authorization.k8s.io/decision"

// readAudit parses every line of the audit log at path as an
// audit.k8s.io/v1 Event, rejecting fields that the type does not have;
// the signed checkpoints of the log's chain, lines of their own, are
// skipped.
func readAudit(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read audit log: %v", err)
	}
	var events []auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if audit.IsCheckpoint(sc.Bytes()) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var ev auditv1.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("audit log line %d is not an audit.k8s.io/v1 Event: %v\n%s", n, err, sc.Bytes())
		}
		if dec.More() {
			t.Fatalf("audit log line %d holds more than one JSON value:\n%s", n, sc.Bytes())
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read audit log: %v", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("audit log does not end with a newline: its last event is incomplete")
	}
	return events
}

// wantEvent describes an audit event that must exist; empty fields match
// anything.
type wantEvent struct {
	// agent is a prefix of the User-Agent: kubectl sends its binary name.
	agent     string
	user      string
	verb      string
	resource  string
	namespace string
	name      string
	// uri is a prefix of the request URI.
	uri      string
	code     int32
	decision string
}

// in reports whether one of events matches w.
func (w wantEvent) in(events []auditv1.Event) bool {
	for _, ev := range events {
		if w.matches(ev) {
			return true
		}
	}
	return false
}

func (w wantEvent) matches(ev auditv1.Event) bool {
	var ref auditv1.ObjectReference
	if ev.ObjectRef != nil {
		ref = *ev.ObjectRef
	}
	var code int32
	if ev.ResponseStatus != nil {
		code = ev.ResponseStatus.Code
	}
	for _, f := range []struct{ want, got string }{
		{w.user, ev.User.Username},
		{w.verb, ev.Verb},
		{w.resource, ref.Resource},
		{w.namespace, ref.Namespace},
		{w.name, ref.Name},
		{w.decision, ev.Annotations[decisionKey]},
	} {
		if f.want != "" && f.want != f.got {
			return false
		}
	}
	return strings.HasPrefix(ev.UserAgent, w.agent) &&
		strings.HasPrefix(ev.RequestURI, w.uri) &&
		(w.code == 0 || w.code == code)
}

// summary is one line describing ev, for failure messages.
func summary(ev auditv1.Event) string {
	var code int32
	if ev.ResponseStatus != nil {
		code = ev.ResponseStatus.Code
	}
	agent, _, _ := strings.Cut(ev.UserAgent, " ")
	return fmt.Sprintf("%s %s %s user=%q code=%d decision=%q level=%s agent=%s",
		ev.Verb, ev.RequestURI, refString(ev.ObjectRef), ev.User.Username, code, ev.Annotations[decisionKey], ev.Level, agent)
}

func refString(ref *auditv1.ObjectReference) string {
	if ref == nil {
		return "-"
	}
	return fmt.Sprintf("%s/%s/%s", ref.Resource, ref.Namespace, ref.Name)
}
