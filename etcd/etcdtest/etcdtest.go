// Package etcdtest starts a real embedded etcd with mutual TLS and
// authentication for tests: a fresh PKI and data directory under
// t.TempDir(), free loopback ports, and cleanup when the test ends.
package etcdtest

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trustplane/trustplane/etcd"
	"github.com/trustplane/trustplane/pki"
)

// Etcd is a running test member.
type Etcd struct {
	Server *etcd.Server
	// Dir is the data directory root: Dir/pki and Dir/etcd.
	Dir string
	// PKI is the tree whose etcd CA the member trusts.
	PKI *pki.Tree
	// ClientConfig is the API server's client configuration.
	ClientConfig etcd.ClientConfig
}

// Start starts a member in a temporary directory, stopped at cleanup.
func Start(t testing.TB) *Etcd {
	t.Helper()
	dir := t.TempDir()
	tree, err := pki.Init(pki.Options{Dir: filepath.Join(dir, "pki"), CAValidity: 24 * time.Hour, LeafValidity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return StartIn(t, dir, tree)
}

// StartIn starts a member using the PKI tree under dir/pki and data in
// dir/etcd, stopped at cleanup.
func StartIn(t testing.TB, dir string, tree *pki.Tree) *Etcd {
	t.Helper()
	ports := FreePorts(t, 3)
	srv, err := etcd.Start(context.Background(), etcd.Config{
		Name:          "test",
		DataDir:       filepath.Join(dir, "etcd"),
		PKIDir:        filepath.Join(tree.Dir, pki.EtcdDir),
		ClientAddress: ports[0],
		PeerAddress:   ports[1],
		HTTPAddress:   ports[2],
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &Etcd{
		Server:       srv,
		Dir:          dir,
		PKI:          tree,
		ClientConfig: etcd.APIServerClientConfig(tree.Dir, []string{srv.ClientURL()}),
	}
}

// Client returns the API server's client, closed at cleanup.
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := etcd.NewClient(context.Background(), e.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// FreePortNumbers returns the ports of FreePorts, for flags that take a
// port.
func FreePortNumbers(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for _, addr := range FreePorts(t, n) {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, n)
	}
	return ports
}

// FreePorts returns n distinct loopback host:port addresses that were free
// a moment ago. They are below Linux's ephemeral range (32768 and up by
// default), where a port the kernel picks for ":0" lies: an outgoing
// connection of any test running beside this one takes its source port
// from that range, and could take a port between its choice here and its
// use by the server.
func FreePorts(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for tries := 0; len(addrs) < n; tries++ {
		if tries == 1000 {
			t.Fatalf("no %d free loopback ports between %d and %d", n, lowPort, highPort)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lowPort+rand.IntN(highPort-lowPort))))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// FreePorts picks ports in [lowPort, highPort), under the ephemeral range.
const (
	lowPort  = 20000
	highPort = 32768
)
