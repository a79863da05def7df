package pki

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path with the given mode, creating missing
// parent directories 0700. It refuses to overwrite an existing file.
func WriteFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// ensurePair makes sure dir/name.crt and dir/name.key exist, calling create
// for both when neither does. A lone certificate or key is an error, never
// replaced.
func ensurePair(dir, name string, create func() (certPEM, keyPEM []byte, err error)) (created bool, err error) {
	certPath := filepath.Join(dir, name+".crt")
	keyPath := filepath.Join(dir, name+".key")
	certOK, err := exists(certPath)
	if err != nil {
		return false, err
	}
	keyOK, err := exists(keyPath)
	if err != nil {
		return false, err
	}
	switch {
	case certOK && keyOK:
		return false, nil
	case certOK != keyOK:
		return false, fmt.Errorf("%s: only one of %s.crt and %s.key exists; remove it to have both issued again", dir, name, name)
	}
	certPEM, keyPEM, err := create()
	if err != nil {
		return false, err
	}
	if err := WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return false, fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := WriteFile(certPath, certPEM, 0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", certPath, err)
	}
	return true, nil
}

// EnsureLeaf makes sure dir/name.{crt,key} exist, issuing them from ca when
// neither does. An existing certificate is kept, but it must have been
// issued by ca and, for server certificates, cover every host in r.Hosts:
// otherwise EnsureLeaf says so rather than silently reissuing it.
func EnsureLeaf(ca *CA, dir, name string, r Request) (created bool, err error) {
	created, err = ensurePair(dir, name, func() ([]byte, []byte, error) { return ca.Issue(r) })
	if err != nil || created {
		return created, err
	}
	leaf, err := LoadKeyPair(dir, name)
	if err != nil {
		return false, err
	}
	if err := leaf.Leaf.CheckSignatureFrom(ca.Cert); err != nil {
		return false, fmt.Errorf("%s.crt was not issued by %q; remove it to have it issued again", filepath.Join(dir, name), ca.Cert.Subject.CommonName)
	}
	for _, h := range r.Hosts {
		if err := leaf.Leaf.VerifyHostname(h); err != nil {
			return false, fmt.Errorf("%s.crt does not cover host %q; remove %s.crt and %s.key to have it issued again", filepath.Join(dir, name), h, name, name)
		}
	}
	return false, nil
}
