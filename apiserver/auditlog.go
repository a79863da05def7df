package apiserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/trustplane/trustplane/audit"
)

// AuditLogOptions are kube-apiserver's --audit-log-max* and
// --audit-log-compress flags, in its units.
type AuditLogOptions struct {
	// MaxAge is the number of days a rotated file is kept; 0 keeps all.
	MaxAge int
	// MaxBackup is the number of rotated files kept; 0 keeps all.
	MaxBackup int
	// MaxSize is the size in megabytes past which the log is rotated.
	MaxSize int
	// Compress gzips rotated files.
	Compress bool
}

// DefaultAuditLogOptions are what the CIS Kubernetes Benchmark asks of
// kube-apiserver (1.2.17-1.2.19): 30 days, 10 files, 100 MB; compressed.
func DefaultAuditLogOptions() AuditLogOptions {
	return AuditLogOptions{MaxAge: 30, MaxBackup: 10, MaxSize: 100, Compress: true}
}

func (o AuditLogOptions) validate() error {
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
	return errors.Join(errs...)
}

func (o AuditLogOptions) rotation() audit.Rotation {
	return audit.Rotation{
		MaxSize:    int64(o.MaxSize) << 20,
		MaxBackups: o.MaxBackup,
		MaxAge:     time.Duration(o.MaxAge) * 24 * time.Hour,
		Compress:   o.Compress,
	}
}
