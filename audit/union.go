package audit

import (
	"errors"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// The plugin labels of the backends' errors, kube-apiserver's.
const (
	LogPlugin     = "log"
	WebhookPlugin = "webhook"
)

// A PluginError is a backend's failure to store an event, named by its
// plugin label.
type PluginError struct {
	Plugin string
	Err    error
	// Tolerated: the event is stored all the same, by the log, and the
	// request may go on (see Union.TolerateReceived).
	Tolerated bool
}

// Tolerated reports whether err is the failure of a backend that the
// request may go on without: the event is in the log.
func Tolerated(err error) bool {
	pe, ok := errors.AsType[*PluginError](err)
	return ok && pe.Tolerated
}

func (e *PluginError) Error() string { return "audit " + e.Plugin + ": " + e.Err.Error() }
func (e *PluginError) Unwrap() error { return e.Err }

// Sink stores audit events; an error means the event is not stored.
type Sink interface {
	Write(*auditv1.Event) error
}

// Union stores each event with the webhook, then in the log, and fails if
// either fails. The webhook goes first because its failure, a full buffer
// or an event not delivered, is the one to expect, and it leaves nothing
// written; a log that fails after it leaves the webhook an event of a
// request that is then refused.
type Union struct {
	Webhook Sink
	Log     Sink
	// TolerateReceived, in --audit-webhook-mode=blocking: a
	// RequestReceived event that the webhook fails is stored by the log
	// alone, and Write's error is Tolerated, so that the request goes on;
	// its later events must still reach both.
	TolerateReceived bool
}

func (u Union) Write(ev *auditv1.Event) error {
	werr := u.Webhook.Write(ev)
	if werr != nil && !(u.TolerateReceived && ev.Stage == auditv1.StageRequestReceived) {
		return &PluginError{Plugin: WebhookPlugin, Err: werr}
	}
	if err := u.Log.Write(ev); err != nil {
		return &PluginError{Plugin: LogPlugin, Err: err}
	}
	if werr != nil {
		return &PluginError{Plugin: WebhookPlugin, Err: werr, Tolerated: true}
	}
	return nil
}
