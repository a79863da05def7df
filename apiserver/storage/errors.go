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
)
