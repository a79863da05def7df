package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// listOptions are a list's query parameters.
type listOptions struct {
	resourceVersion string
	match           metav1.ResourceVersionMatch
	limit           int64
	cont            *continueToken
}

// continueToken is kube-apiserver's continue token: the revision the list
// is read at and the key, relative to the list's prefix, to go on from.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func parseListOptions(r *http.Request) (*listOptions, error) {
	q := r.URL.Query()
	o := &listOptions{resourceVersion: q.Get("resourceVersion"), match: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("limit must be a non-negative integer, got %q", v))
		}
		o.limit = n
	}
	if o.resourceVersion != "" && o.resourceVersion != "0" {
		if _, err := storage.ParseResourceVersion(o.resourceVersion); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	switch o.match {
	case "":
	case metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact:
		if o.resourceVersion == "" {
			return nil, invalidListOptions(fieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if o.match == metav1.ResourceVersionMatchExact && o.resourceVersion == "0" {
			return nil, invalidListOptions(fieldForbidden("resourceVersionMatch", "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\""))
		}
	default:
		return nil, invalidListOptions(fieldNotSupported("resourceVersionMatch", string(o.match), []string{string(metav1.ResourceVersionMatchNotOlderThan), string(metav1.ResourceVersionMatchExact)}))
	}
	if c := q.Get("continue"); c != "" {
		if o.resourceVersion != "" && o.resourceVersion != "0" {
			return nil, invalidListOptions(fieldForbidden("resourceVersion", "specifying resource version is not allowed when using continue"))
		}
		raw, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			return nil, apierrors.NewBadRequest("continue key is not valid: not base64")
		}
		var tok continueToken
		if err := json.Unmarshal(raw, &tok); err != nil || tok.APIVersion != "meta.k8s.io/v1" || tok.ResourceVersion <= 0 || strings.HasPrefix(tok.StartKey, "/") || strings.Contains(tok.StartKey, "..") {
			return nil, apierrors.NewBadRequest("continue key is not valid")
		}
		o.cont = &tok
	}
	return o, nil
}

// list answers a list. A continuation, a limit on a fresh list, or an exact
// resourceVersion read pages from etcd; everything else comes from the
// watch cache: at etcd's current revision when no resourceVersion is
// given, as it is for "0", or once it has caught up with the one given.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, q *scope) {
	ctx := r.Context()
	sel, err := parseSelector(q, r)
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	opts, err := parseListOptions(r)
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	gr := q.res.GroupResource()
	prefix := storage.ListPrefix(gr, q.namespace)
	var items []runtime.Object
	add := func(obj runtime.Object) error {
		if obj = q.served(obj); sel.matches(obj) {
			items = append(items, obj)
		}
		return nil
	}
	var rev int64
	next := ""
	switch {
	case opts.cont != nil || (opts.limit > 0 && opts.resourceVersion == "") || opts.match == metav1.ResourceVersionMatchExact:
		start, at := prefix, int64(0)
		if opts.cont != nil {
			start, at = prefix+opts.cont.StartKey, opts.cont.ResourceVersion
		} else if opts.match == metav1.ResourceVersionMatchExact {
			at, _ = storage.ParseResourceVersion(opts.resourceVersion)
		}
		page, err := h.store.ListPage(ctx, q.storedResource().GroupResource(), prefix, start, at, opts.limit, q.storedResource().NewObject, add)
		if errors.Is(err, storage.ErrExpired) {
			msg := fmt.Sprintf("too old resource version: %d", at)
			if opts.cont != nil {
				msg = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
			}
			h.respond.Error(w, r, apierrors.NewResourceExpired(msg))
			return
		}
		if err != nil {
			h.respond.Error(w, r, err)
			return
		}
		rev = page.Rev
		if page.Next != "" {
			tok, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: page.Rev, StartKey: strings.TrimPrefix(page.Next, prefix)})
			next = base64.RawURLEncoding.EncodeToString(tok)
		}
	default:
		cache := h.cache(q)
		var at int64
		switch opts.resourceVersion {
		case "":
			if at, err = cache.CurrentRevision(ctx); err != nil {
				h.respond.Error(w, r, err)
				return
			}
		case "0":
		default:
			at, _ = storage.ParseResourceVersion(opts.resourceVersion)
		}
		listCtx := ctx
		if opts.resourceVersion != "" && opts.resourceVersion != "0" {
			var cancel context.CancelFunc
			listCtx, cancel = context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
		}
		rev, err = cache.List(listCtx, prefix, at, add)
		if err != nil {
			if listCtx.Err() != nil && ctx.Err() == nil {
				h.respond.Error(w, r, tooLargeResourceVersion(at, cache.Revision()))
				return
			}
			h.respond.Error(w, r, err)
			return
		}
	}
	list := q.res.NewList()
	if err := meta.SetList(list, items); err != nil {
		h.respond.Error(w, r, err)
		return
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		h.respond.Error(w, r, err)
		return
	}
	listMeta.SetResourceVersion(strconv.FormatInt(rev, 10))
	listMeta.SetContinue(next)
	h.respond.Object(w, r, http.StatusOK, list)
}

// tooLargeResourceVersion is kube-apiserver's answer to a read at a
// revision the cache has not reached within its wait: 504 with a cause
// that tells reflectors to relist.
func tooLargeResourceVersion(want, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}
