package datadir

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// EtcdServers is the file that records the etcd client URLs of the API
// server that last started on the directory, one a line, for the commands
// that read etcd as it does (secrets-encrypt).
func (l Layout) EtcdServers() string { return filepath.Join(l.Dir, "etcd-servers") }

// WriteEtcdServers records urls, replacing the record of an earlier start:
// it is a note of where etcd is, not configuration. The file is written
// beside and renamed, so a reader never sees half of it.
func WriteEtcdServers(l Layout, urls []string) error {
	if len(urls) == 0 {
		return errors.New("record etcd servers: no URL")
	}
	tmp, err := os.CreateTemp(l.Dir, ".etcd-servers-")
	if err != nil {
		return fmt.Errorf("record etcd servers: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(strings.Join(urls, "\n") + "\n")
	if err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), l.EtcdServers())
	}
	if err != nil {
		return fmt.Errorf("record etcd servers: %w", err)
	}
	return nil
}

// ReadEtcdServers reads the URLs WriteEtcdServers recorded.
func ReadEtcdServers(l Layout) ([]string, error) {
	data, err := os.ReadFile(l.EtcdServers())
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: start the cluster with trustplane up, or give --etcd-servers", l.EtcdServers())
	}
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if u, err := url.Parse(line); err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("%s: %q is not an https URL", l.EtcdServers(), line)
		}
		urls = append(urls, line)
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("%s is empty", l.EtcdServers())
	}
	return urls, nil
}
