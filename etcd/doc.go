// Package etcd runs trustplane's embedded etcd and builds the API server's
// client to it.
//
// The server listens only with mutual TLS from the etcd CA, for clients and
// peers alike, with no automatic TLS. etcd authentication is on: a client is
// the etcd user named by its certificate's common name, and the only user
// with any permission is the API server's client identity, which may read
// and write the /registry/ prefix and nothing else. The root user exists
// because etcd requires it to enable authentication, but has no password and
// no certificate is ever issued for it.
//
//	srv, err := etcd.Start(ctx, etcd.Config{
//		Name:          "trustplane",
//		DataDir:       "trustplane-data/etcd",
//		PKIDir:        "trustplane-data/pki/etcd",
//		ClientAddress: "127.0.0.1:2379",
//		PeerAddress:   "127.0.0.1:2380",
//		HTTPAddress:   "127.0.0.1:2381",
//	})
//	if err != nil { ... }
//	defer srv.Close()
package etcd
