package datadir

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestEtcdServersRecord(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	if _, err := ReadEtcdServers(l); err == nil || !strings.Contains(err.Error(), "--etcd-servers") {
		t.Errorf("no record: err = %v, want one that says to give --etcd-servers", err)
	}
	for _, urls := range [][]string{{"https://127.0.0.1:2379"}, {"https://10.0.0.1:2379", "https://10.0.0.2:2379"}} {
		if err := WriteEtcdServers(l, urls); err != nil {
			t.Fatal(err)
		}
		got, err := ReadEtcdServers(l)
		if err != nil || !slices.Equal(got, urls) {
			t.Errorf("read %v, %v; want %v", got, err, urls)
		}
	}
	fi, err := os.Stat(l.EtcdServers())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, %v; want 0600", fi.Mode(), err)
	}
	for _, bad := range []string{"", "http://127.0.0.1:2379\n", "127.0.0.1:2379\n"} {
		if err := os.WriteFile(l.EtcdServers(), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadEtcdServers(l); err == nil {
			t.Errorf("record %q read as %v, want an error", bad, got)
		}
	}
}
