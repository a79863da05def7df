package apiserver

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/trustplane/trustplane/audit"
)

// AuditOptions are kube-apiserver's --audit-policy-file,
// --audit-log-max*, --audit-log-compress and --audit-webhook-* flags, in
// its units.
type AuditOptions struct {
	// PolicyFile is the audit.k8s.io/v1 Policy; "" is
	// DIR/audit-policy.yaml.
	PolicyFile string
	// MaxAge is the number of days a rotated file is kept; 0 keeps all.
	MaxAge int
	// MaxBackup is the number of rotated files kept; 0 keeps all.
	MaxBackup int
	// MaxSize is the size in megabytes past which the log is rotated.
	MaxSize int
	// Compress gzips rotated files.
	Compress bool
	// Webhook is the webhook backend, beside the log; none when its
	// KubeconfigFile is "".
	Webhook audit.WebhookConfig
}

// DefaultAuditOptions are what the CIS Kubernetes Benchmark asks of
// kube-apiserver (1.2.17-1.2.19): 30 days, 10 files, 100 MB; compressed;
// and kube-apiserver's webhook batching.
func DefaultAuditOptions() AuditOptions {
	return AuditOptions{MaxAge: 30, MaxBackup: 10, MaxSize: 100, Compress: true, Webhook: audit.DefaultWebhookConfig()}
}

func (o AuditOptions) validate() error {
	var errs []error
	if o.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxage %d is negative", o.MaxAge))
	}
	if o.MaxBackup < 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxbackup %d is negative", o.MaxBackup))
	}
	// Unlike kube-apiserver, 0 is not read as 100: a log that never
	// rotates is not on offer.
	if o.MaxSize <= 0 {
		errs = append(errs, fmt.Errorf("--audit-log-maxsize %d must be positive", o.MaxSize))
	}
	if o.Webhook.KubeconfigFile != "" {
		errs = append(errs, o.Webhook.Validate())
	}
	return errors.Join(errs...)
}

func (o AuditOptions) rotation() audit.Rotation {
	return audit.Rotation{
		MaxSize:    int64(o.MaxSize) << 20,
		MaxBackups: o.MaxBackup,
		MaxAge:     time.Duration(o.MaxAge) * 24 * time.Hour,
		Compress:   o.Compress,
	}
}

// open opens the audit log at path, and the webhook when there is one,
// and returns the sink that writes to both and the function that closes
// them.
func (o AuditOptions) open(path string, signer note.Signer, logger *slog.Logger) (AuditSink, func() error, error) {
	log, err := audit.OpenRotatingWriter(path, signer, audit.DefaultCheckpointEvery, o.rotation())
	if err != nil {
		return nil, nil, err
	}
	if o.Webhook.KubeconfigFile == "" {
		return log, log.Close, nil
	}
	webhook, err := audit.NewWebhook(o.Webhook, logger)
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	// The webhook first: its last events go before the log's closing
	// checkpoint, which no one waits for.
	closeBoth := func() error { return errors.Join(webhook.Close(), log.Close()) }
	return audit.Union{Webhook: webhook, Log: log, TolerateReceived: webhook.Mode() == audit.ModeBlocking}, closeBoth, nil
}
