package main

import (
	"github.com/spf13/pflag"

	"github.com/trustplane/trustplane/apiserver"
)

// addAuditLogFlags adds kube-apiserver's audit log rotation flags, with
// the CIS benchmark's values as defaults, to up and apiserver.
func addAuditLogFlags(fs *pflag.FlagSet, o *apiserver.AuditLogOptions) {
	fs.IntVar(&o.MaxAge, "audit-log-maxage", o.MaxAge, "days a rotated audit log file is kept, by the time in its name; 0 keeps all")
	fs.IntVar(&o.MaxBackup, "audit-log-maxbackup", o.MaxBackup, "rotated audit log files kept, the newest; 0 keeps all")
	fs.IntVar(&o.MaxSize, "audit-log-maxsize", o.MaxSize, "megabytes the audit log grows to before it is rotated")
	fs.BoolVar(&o.Compress, "audit-log-compress", o.Compress, "gzip rotated audit log files")
}
