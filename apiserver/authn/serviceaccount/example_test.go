package serviceaccount_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log"
	"time"

	"github.com/trustplane/trustplane/apiserver/authn/serviceaccount"
)

// A token issued for a Pod's projected volume, verified by the API server.
// In a cluster the two PEMs are DIR/pki/sa.key and DIR/pki/sa.pub.
func Example() {
	keyPEM, pubPEM := keyPair()
	const issuer = "https://kubernetes.default.svc.cluster.local"

	iss, err := serviceaccount.LoadIssuer(keyPEM, issuer)
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	tok, err := iss.Issue(serviceaccount.Claims{
		Namespace: "default",
		Name:      "builder",
		UID:       "9a3e1c2b-5f0d-4b8e-9c71-2d6f0a4b8e13",
		Bound:     &serviceaccount.BoundObject{Kind: serviceaccount.KindPod, Name: "builder-7d9f", UID: "1f7c9e2a-3b4d-4c5e-8f60-7a8b9c0d1e2f"},
		Audiences: []string{issuer},
		Expiry:    now.Add(time.Hour),
	}, now)
	if err != nil {
		log.Fatal(err)
	}

	ver, err := serviceaccount.LoadVerifier([][]byte{pubPEM}, issuer, []string{issuer})
	if err != nil {
		log.Fatal(err)
	}
	if !serviceaccount.LooksLikeJWT(tok) {
		log.Fatal("not a JWT")
	}
	c, err := ver.Verify(tok, nil, time.Now())
	if err != nil {
		// Log err; answer the client with a bare 401.
		log.Fatal(err)
	}
	fmt.Printf("%s/%s bound to %s %s; token %v\n", c.Namespace, c.Name, c.Bound.Kind, c.Bound.Name, serviceaccount.Token(tok))
	// Output: default/builder bound to Pod builder-7d9f; token [redacted]
}

// keyPair makes a key pair in the format trustplane init writes.
func keyPair() (keyPEM, pubPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		log.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		log.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
}
