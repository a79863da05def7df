package serviceaccount

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/apimachinery/pkg/types"
)

// The kinds of object a token can be bound to, as in kube's TokenRequest
// (spec.boundObjectRef.kind).
const (
	KindPod    = "Pod"
	KindSecret = "Secret"
	KindNode   = "Node"
)

// BoundObject is what a token is bound to besides its service account.
type BoundObject struct {
	Kind string // "Pod", "Secret" or "Node"
	Name string
	UID  types.UID
}

// Claims are the verified contents of a token.
//
// Times in a token have a precision of one second: Issue truncates them and
// Verify returns them truncated, in UTC.
type Claims struct {
	// Namespace, Name and UID identify the service account.
	Namespace, Name string
	UID             types.UID
	// Bound is nil when the token is not bound to an object.
	Bound *BoundObject

	Audiences []string
	ID        string // jti
	IssuedAt  time.Time
	NotBefore time.Time
	Expiry    time.Time
}

// tokenClaims is the JWT payload, field for field what kube-apiserver
// writes (pkg/serviceaccount/claims.go upstream).
type tokenClaims struct {
	jwt.RegisteredClaims
	Kubernetes *kubernetesClaim `json:"kubernetes.io,omitempty"`
}

// kubernetesClaim is the private "kubernetes.io" claim. A Pod-bound token
// from kube 1.30+ also carries the Pod's Node; any other pair of bound
// objects is refused by Verify.
type kubernetesClaim struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount *objectRef       `json:"serviceaccount,omitempty"`
	Pod            *objectRef       `json:"pod,omitempty"`
	Secret         *objectRef       `json:"secret,omitempty"`
	Node           *objectRef       `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type objectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}
