package storage

import "errors"

// Errors returned by Store; callers turn them into API errors naming the
// object.
var (
	ErrNotFound      = errors.New("object not found")
	ErrAlreadyExists = errors.New("object already exists")
	// ErrConflict means the object changed since the revision the write
	// was conditioned on.
	ErrConflict = errors.New("object has been modified")
	// ErrAlsoChanged means a key written with the object (Also) changed
	// since the revision the write was conditioned on; nothing was
	// written.
	ErrAlsoChanged = errors.New("a record written with the object has been modified")
	// ErrTooLarge means the stored form of an object would exceed
	// MaxObjectBytes.
	ErrTooLarge = errors.New("object is too large")
)

// MaxObjectBytes bounds an object as stored, as etcd's request limit does
// for kube-apiserver.
const MaxObjectBytes = 1536 * 1024
