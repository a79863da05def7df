package main

import (
	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/apiserver"
)

// addAuditLogFlags adds kube-apiserver's audit flags to up and apiserver:
// the policy file, the log's rotation, with the CIS benchmark's values as
// defaults, and the webhook backend.
func addAuditLogFlags(fs *pflag.FlagSet, o *apiserver.AuditOptions) {
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile, "audit.k8s.io/v1 Policy file; default DIR/audit-policy.yaml")
	fs.IntVar(&o.MaxAge, "audit-log-maxage", o.MaxAge, "days a rotated audit log file is kept, by the time in its name; 0 keeps all")
	fs.IntVar(&o.MaxBackup, "audit-log-maxbackup", o.MaxBackup, "rotated audit log files kept, the newest; 0 keeps all")
	fs.IntVar(&o.MaxSize, "audit-log-maxsize", o.MaxSize, "megabytes the audit log grows to before it is rotated")
	fs.BoolVar(&o.Compress, "audit-log-compress", o.Compress, "gzip rotated audit log files")
	w := &o.Webhook
	fs.StringVar(&w.KubeconfigFile, "audit-webhook-config-file", "", "kubeconfig of an audit webhook that gets every event too, over the TLS and client certificate it names")
	fs.StringVar(&w.Mode, "audit-webhook-mode", w.Mode, "how events reach the webhook: "+
		"batch (buffered, sent in batches; a full buffer refuses requests), "+
		"blocking (each event sent before the request is answered; an event not delivered refuses the response), "+
		"blocking-strict (blocking, and a RequestReceived event not delivered refuses the request before it is handled)")
	fs.IntVar(&w.BufferSize, "audit-webhook-batch-buffer-size", w.BufferSize, "events waiting for the webhook in batch mode; when full, requests are refused")
	fs.IntVar(&w.MaxBatchSize, "audit-webhook-batch-max-size", w.MaxBatchSize, "events in one batch to the webhook")
	fs.DurationVar(&w.MaxBatchWait, "audit-webhook-batch-max-wait", w.MaxBatchWait, "longest wait of an event for its batch to fill")
	fs.BoolVar(&w.ThrottleEnable, "audit-webhook-batch-throttle-enable", w.ThrottleEnable, "limit the batches sent to the webhook a second")
	fs.Float32Var(&w.ThrottleQPS, "audit-webhook-batch-throttle-qps", w.ThrottleQPS, "batches sent to the webhook a second, at most, when throttled")
	fs.IntVar(&w.ThrottleBurst, "audit-webhook-batch-throttle-burst", w.ThrottleBurst, "batches sent to the webhook at once, when throttled")
	fs.DurationVar(&w.InitialBackoff, "audit-webhook-initial-backoff", w.InitialBackoff, "wait before retrying a send the webhook failed, doubled with each retry")
}
