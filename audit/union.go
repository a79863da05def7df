package audit

import (
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
}

func (e *PluginError) Error() string { return "audit " + e.Plugin + ": " + e.Err.Error() }
func (e *PluginError) Unwrap() error { return e.Err }

// Sink stores audit events; an error means the event is not stored.
type Sink interface {
	Write(*auditv1.Event) error
}

// Union stores each event with the webhook, then in the log, and fails if
// either fails. The webhook goes first because its failure, a full buffer,
// is the one to expect, and it leaves nothing written; a log that fails
// after it leaves the webhook an event of a request that is then refused.
type Union struct {
	Webhook Sink
	Log     Sink
}

func (u Union) Write(ev *auditv1.Event) error {
	if err := u.Webhook.Write(ev); err != nil {
		return &PluginError{Plugin: WebhookPlugin, Err: err}
	}
	if err := u.Log.Write(ev); err != nil {
		return &PluginError{Plugin: LogPlugin, Err: err}
	}
	return nil
}
