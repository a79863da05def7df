package audit

import (
	"errors"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// sinkFunc is a Sink of one function, for the Union's tests.
type sinkFunc func(*auditv1.Event) error

func (f sinkFunc) Write(ev *auditv1.Event) error { return f(ev) }

var _ Sink = sinkFunc(nil)

// A Union fails with the webhook's failure, before writing the log, and
// with the log's; in blocking mode (TolerateReceived) a RequestReceived
// event the webhook fails is written to the log and the error is
// Tolerated, and any later stage the webhook fails is not.
func TestUnion(t *testing.T) {
	down := errors.New("webhook down")
	for _, tt := range []struct {
		name         string
		tolerate     bool
		stage        auditv1.Stage
		webhookErr   error
		logErr       error
		wantPlugin   string // "" for no error
		wantTolerate bool
		wantLogged   bool
	}{
		{name: "both write", stage: auditv1.StageResponseComplete, wantLogged: true},
		{name: "the webhook fails", stage: auditv1.StageResponseComplete, webhookErr: down, wantPlugin: WebhookPlugin},
		{name: "the log fails", stage: auditv1.StageResponseComplete, logErr: errors.New("disk full"), wantPlugin: LogPlugin},
		{name: "the webhook fails RequestReceived", stage: auditv1.StageRequestReceived, webhookErr: down, wantPlugin: WebhookPlugin},
		{name: "blocking: the webhook fails RequestReceived", tolerate: true, stage: auditv1.StageRequestReceived, webhookErr: down,
			wantPlugin: WebhookPlugin, wantTolerate: true, wantLogged: true},
		{name: "blocking: the webhook fails ResponseComplete", tolerate: true, stage: auditv1.StageResponseComplete, webhookErr: down, wantPlugin: WebhookPlugin},
		{name: "blocking: both fail RequestReceived", tolerate: true, stage: auditv1.StageRequestReceived, webhookErr: down, logErr: errors.New("disk full"),
			wantPlugin: LogPlugin},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logged := false
			u := Union{
				Webhook: sinkFunc(func(*auditv1.Event) error { return tt.webhookErr }),
				Log: sinkFunc(func(*auditv1.Event) error {
					logged = tt.logErr == nil
					return tt.logErr
				}),
				TolerateReceived: tt.tolerate,
			}
			err := u.Write(&auditv1.Event{Stage: tt.stage})
			pe, _ := errors.AsType[*PluginError](err)
			switch {
			case tt.wantPlugin == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.wantPlugin != "" && (pe == nil || pe.Plugin != tt.wantPlugin):
				t.Errorf("err = %v, want the %s plugin's", err, tt.wantPlugin)
			}
			if Tolerated(err) != tt.wantTolerate {
				t.Errorf("Tolerated(%v) = %v, want %v", err, Tolerated(err), tt.wantTolerate)
			}
			if logged != tt.wantLogged {
				t.Errorf("logged %v, want %v", logged, tt.wantLogged)
			}
		})
	}
}
