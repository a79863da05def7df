// Package datadir creates and describes trustplane's data directory: the
// PKI, one kubeconfig per identity, the encryption and audit
// configuration, etcd's data and the audit log.
package datadir

import "path/filepath"

// DefaultDir is the data directory when none is given.
const DefaultDir = "trustplane-data"

// Layout names the files of a data directory.
type Layout struct{ Dir string }

func (l Layout) PKI() string              { return filepath.Join(l.Dir, "pki") }
func (l Layout) EtcdPKI() string          { return filepath.Join(l.Dir, "pki", "etcd") }
func (l Layout) EtcdData() string         { return filepath.Join(l.Dir, "etcd") }
func (l Layout) EncryptionConfig() string { return filepath.Join(l.Dir, "encryption-config.yaml") }
func (l Layout) AuditPolicy() string      { return filepath.Join(l.Dir, "audit-policy.yaml") }
func (l Layout) AuditLog() string         { return filepath.Join(l.Dir, "audit", "audit.log") }
func (l Layout) Policies() string         { return filepath.Join(l.Dir, "policies") }
func (l Layout) KMSKey() string           { return filepath.Join(l.Dir, "pki", "kms.key") }
func (l Layout) KMSSocket() string        { return filepath.Join(l.Dir, "kms.sock") }

// Kubeconfig is the kubeconfig of one identity: admin, scheduler or
// controller-manager.
func (l Layout) Kubeconfig(name string) string { return filepath.Join(l.Dir, name+".conf") }
