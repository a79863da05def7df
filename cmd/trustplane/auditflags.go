package main

import (
	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/apiserver"
)

// addAuditLogFlags adds kube-apiserver's audit log rotation flags, with
// the CIS benchmark's values as defaults, and its webhook flags, to up and
// apiserver.
func addAuditLogFlags(fs *pflag.FlagSet, o *apiserver.AuditOptions) {
	fs.IntVar(&o.MaxAge, "audit-log-maxage", o.MaxAge, "days a rotated audit log file is kept, by the time in its name; 0 keeps all")
	fs.IntVar(&o.MaxBackup, "audit-log-maxbackup", o.MaxBackup, "rotated audit log files kept, the newest; 0 keeps all")
	fs.IntVar(&o.MaxSize, "audit-log-maxsize", o.MaxSize, "megabytes the audit log grows to before it is rotated")
	fs.BoolVar(&o.Compress, "audit-log-compress", o.Compress, "gzip rotated audit log files")
	w := &o.Webhook
	fs.StringVar(&w.KubeconfigFile, "audit-webhook-config-file", "", "kubeconfig of an audit webhook that gets every event too, in batches, over the TLS and client certificate it names; a full buffer refuses requests")
	fs.IntVar(&w.BufferSize, "audit-webhook-batch-buffer-size", w.BufferSize, "events waiting for the webhook; when full, requests are refused")
	fs.IntVar(&w.MaxBatchSize, "audit-webhook-batch-max-size", w.MaxBatchSize, "events in one batch to the webhook")
	fs.DurationVar(&w.MaxBatchWait, "audit-webhook-batch-max-wait", w.MaxBatchWait, "longest wait of an event for its batch to fill")
	fs.DurationVar(&w.InitialBackoff, "audit-webhook-initial-backoff", w.InitialBackoff, "wait before retrying a batch the webhook failed, doubled with each retry")
}
