package handlers

import (
	"context"
	"errors"
	"net/http"

	"k8s.io/apiserver/pkg/warning"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
)

// The stages of the write path, in the order every write takes them.
const (
	// stageDecode reads the request: its options, then its body.
	stageDecode = "decode"
	// stageDefaults makes the object to write, from the request's and the
	// stored one: the kind's defaults and what the server sets (system
	// fields, managed fields, generation).
	stageDefaults = "defaults"
	// stageMutating runs the mutating admission plugins.
	stageMutating = "mutating admission"
	// stageValidation checks the object by the kind's rules.
	stageValidation = "validation"
	// stageValidating runs the validating admission plugins.
	stageValidating = "validating admission"
	// stageStorage writes to etcd, or computes a review's answer.
	stageStorage = "storage"
)

// Stages are the stages of the write path, in order.
func Stages() []string {
	return []string{stageDecode, stageDefaults, stageMutating, stageValidation, stageValidating, stageStorage}
}

// writeInput is what the decode stage reads from a write request.
type writeInput struct {
	// obj is the request's object; nil for a patch or a delete.
	obj runtime.Object
	// audited is the audit event's request object: obj, the patch or the
	// DeleteOptions.
	audited runtime.Object
	// opts are the validated options, as admission sees them; dry,
	// whether they ask for a dry run.
	opts runtime.Object
	dry  bool
}

// objectRef names one object a write changes.
type objectRef struct {
	namespace, name string
}

// attempt is one pass of a write of one object down the path: an update
// that loses a race with another writer starts a new one.
type attempt struct {
	ref objectRef
	op  admission.Operation
	// old is the stored object the write starts from; nil for a create.
	old runtime.Object
	// obj is the object to write; nil for a delete.
	obj runtime.Object
	// conditional: the write holds to the resourceVersion the request
	// names, so a conflict is the client's to resolve, not retried.
	conditional bool
}

// retryError from a route's store sends the write back to read the stored
// object again, as kube-apiserver's GuaranteedUpdate does, until the
// request's deadline; then err, the conflict, is the answer.
type retryError struct{ err error }

func (e *retryError) Error() string { return e.err.Error() }

func (e *retryError) Unwrap() error { return e.err }

// writeRoute is one kind of write: its verb, resource or subresource. It
// supplies the steps of each stage; Handler.write runs them in order.
type writeRoute struct {
	// op is the admission operation; load may turn an Update into a
	// Create (server-side apply of a missing object).
	op admission.Operation
	// kind is the kind admission sees: the resource's, or the
	// subresource's (Binding, TokenRequest).
	kind schema.GroupVersionKind
	// decode reads the request's options and body.
	decode func(w http.ResponseWriter, r *http.Request) (*writeInput, error)
	// targets are the objects written; nil means the one the URL names.
	targets func(ctx context.Context, r *http.Request) ([]objectRef, error)
	// load reads the stored object into a.old; nil for routes that start
	// from none (creates, reviews). A missing object with skipMissing
	// skips the target.
	load        func(ctx context.Context, a *attempt) error
	skipMissing bool
	// build sets a.obj (and a.conditional): the defaults stage.
	build func(ctx context.Context, w http.ResponseWriter, r *http.Request, in *writeInput, a *attempt) error
	// validate checks a.obj against a.old: the validation stage.
	validate func(ctx context.Context, in *writeInput, a *attempt) error
	// store writes, or answers a review: the storage stage. Its result is
	// what the client is answered with for the target.
	store func(ctx context.Context, in *writeInput, a *attempt) (runtime.Object, error)
	// respond answers the client with the results of every target.
	respond func(w http.ResponseWriter, r *http.Request, results []runtime.Object)
}

// write is the one path every write takes, whatever its verb or
// subresource: decode → defaults → mutating admission → validation →
// validating admission → storage, with the last five again for each
// target and each retry of an update that raced with another writer.
// The request object is recorded for the audit log once decoded.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, q *scope, route *writeRoute) {
	// Admission plugins warn the client through the context.
	ctx := warning.WithWarningRecorder(r.Context(), responses.WarningRecorder(w))
	r = r.WithContext(ctx)
	fail := func(err error) { h.respond.Error(w, r, err) }

	h.enter(ctx, stageDecode)
	in, err := route.decode(w, r)
	if err != nil {
		fail(err)
		return
	}
	audit.LogRequestObject(ctx, in.audited)

	targets := []objectRef{{namespace: q.namespace, name: q.name}}
	if route.targets != nil {
		if targets, err = route.targets(ctx, r); err != nil {
			fail(err)
			return
		}
	}
	var results []runtime.Object
	for _, ref := range targets {
		for {
			a := &attempt{ref: ref, op: route.op}
			if route.load != nil {
				if err := route.load(ctx, a); err != nil {
					if route.skipMissing && apierrors.IsNotFound(err) {
						break
					}
					fail(err)
					return
				}
			}

			h.enter(ctx, stageDefaults)
			if err := route.build(ctx, w, r, in, a); err != nil {
				fail(err)
				return
			}
			attrs := admission.NewAttributesRecord(a.obj, a.old, route.kind, a.ref.namespace, a.name(), q.res.GVR, q.subresource, a.op, in.opts, in.dry, userFrom(ctx))

			h.enter(ctx, stageMutating)
			if h.mutating.Handles(a.op) {
				if err := h.mutating.Admit(ctx, attrs, h.objectInterfaces); err != nil {
					fail(err)
					return
				}
				// What a plugin changed is defaulted again, as kube
				// decodes an admission webhook's patched object.
				if a.obj != nil && route.kind == q.res.GVK() && q.res.Defaults != nil {
					q.res.Defaults(a.obj)
				}
			}

			h.enter(ctx, stageValidation)
			if err := route.validate(ctx, in, a); err != nil {
				fail(err)
				return
			}

			h.enter(ctx, stageValidating)
			if h.validating.Handles(a.op) {
				if err := h.validating.Validate(ctx, attrs, h.objectInterfaces); err != nil {
					fail(err)
					return
				}
			}

			h.enter(ctx, stageStorage)
			out, err := route.store(ctx, in, a)
			if retry := (*retryError)(nil); errors.As(err, &retry) {
				if ctx.Err() == nil {
					continue
				}
				err = retry.err
			}
			if err != nil {
				fail(err)
				return
			}
			results = append(results, out)
			break
		}
	}
	route.respond(w, r, results)
}

// enter tells the observer, if any, that a write enters a stage.
func (h *Handler) enter(ctx context.Context, stage string) {
	if h.observeWrite != nil {
		h.observeWrite(ctx, stage)
	}
}

// name is the name of the object written: the URL's, or for a create the
// object's own, generated or not.
func (a *attempt) name() string {
	if a.ref.name != "" || a.obj == nil {
		return a.ref.name
	}
	if accessor, err := meta.Accessor(a.obj); err == nil {
		return accessor.GetName()
	}
	return ""
}

// decodeCreate is the decode stage of a POST of one object of kind: its
// options, then its body.
func (h *Handler) decodeCreate(kind schema.GroupVersionKind, newObject func() runtime.Object) func(http.ResponseWriter, *http.Request) (*writeInput, error) {
	return func(w http.ResponseWriter, r *http.Request) (*writeInput, error) {
		opts, err := createOptions(r)
		if err != nil {
			return nil, err
		}
		obj, err := h.decodeKind(w, r, opts.FieldValidation, kind, newObject)
		if err != nil {
			return nil, err
		}
		return &writeInput{obj: obj, audited: obj, opts: opts, dry: isDryRun(opts.DryRun)}, nil
	}
}

// takeRequestObject is the defaults stage of a write whose object is the
// request's as decoded: a review, a Binding, a TokenRequest.
func takeRequestObject(_ context.Context, _ http.ResponseWriter, _ *http.Request, in *writeInput, a *attempt) error {
	a.obj = in.obj
	return nil
}

// respondOne answers the one target's result with code.
func (h *Handler) respondOne(code int) func(w http.ResponseWriter, r *http.Request, results []runtime.Object) {
	return func(w http.ResponseWriter, r *http.Request, results []runtime.Object) {
		h.respond.Object(w, r, code, results[0])
	}
}
