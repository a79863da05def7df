package encryption

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"

	"github.com/trustplane/trustplane/apiserver/storage"
)

var secrets = schema.GroupResource{Resource: "secrets"}

// KeyOf is the key a stored value is under, read from its prefix, and for
// a KMS v2 value from the EncryptedObject after it, which names the KMS
// key id in clear (kube's format). A value without the encrypted prefix
// is plain text; one with a provider the scan does not know is Unknown.
func KeyOf(value []byte) Key {
	k, _ := keyOf(value)
	return k
}

// keyOf is KeyOf, and for a KMS v2 value its data key as the plugin
// sealed it (the EncryptedObject without the data).
func keyOf(value []byte) (Key, *kmstypes.EncryptedObject) {
	provider, name := storage.StoredKey(value)
	switch provider {
	case "":
		return Plain, nil
	case Unknown:
		return Key{Provider: Unknown}, nil
	}
	k := Key{Provider: provider, Name: name}
	if rest, ok := bytes.CutPrefix(value, []byte(kmsV2Prefix+name+":")); ok {
		var o kmstypes.EncryptedObject
		if err := proto.Unmarshal(rest, &o); err == nil {
			k.KeyID = o.KeyID
			o.EncryptedData = nil
			return k, &o
		}
	}
	return k, nil
}

// kmsV2Prefix starts a value of the KMS v2 provider, before its name.
const kmsV2Prefix = "k8s:enc:kms:v2:"

// DefaultPageSize is how many values one etcd range returns.
const DefaultPageSize = 500

// Scanner reads the raw values of resources in etcd, a page at a time,
// all at one revision.
type Scanner struct {
	Client *clientv3.Client
	// PageSize bounds the values of one range; 0 is DefaultPageSize.
	PageSize int64
	// Timeout bounds each range; 0 is 30 seconds.
	Timeout time.Duration
}

// Object is one stored object: its resource, its namespace/name (name
// alone when cluster-scoped), the key its value is under, and its etcd
// ModRevision, which is its resourceVersion.
type Object struct {
	Resource schema.GroupResource
	Name     string
	Under    Key
	Rev      int64
	// DataKey is, for a KMS v2 value, its data key as the plugin sealed
	// it, which only the plugin can open.
	DataKey *kmstypes.EncryptedObject
}

// Scan calls fn with each object of the resources, at the revision of its
// first range, which it returns; rev 0 reads the latest.
func (s Scanner) Scan(ctx context.Context, resources []schema.GroupResource, rev int64, fn func(Object) error) (int64, error) {
	if rev == 0 {
		rctx, cancel := context.WithTimeout(ctx, s.timeout())
		resp, err := s.Client.Get(rctx, storage.Prefix, clientv3.WithCountOnly())
		cancel()
		if err != nil {
			return 0, fmt.Errorf("scan: %w", err)
		}
		rev = resp.Header.Revision
	}
	for _, gr := range resources {
		_, err := s.Pages(ctx, gr, "", rev, func(page []Object, _ string) error {
			for _, o := range page {
				if err := fn(o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return rev, err
		}
	}
	return rev, nil
}

func (s Scanner) timeout() time.Duration {
	if s.Timeout <= 0 {
		return 30 * time.Second
	}
	return s.Timeout
}

// Pages calls fn with each page of gr's objects whose etcd keys sort
// after the key after ("" for all), and the last key of the page. It
// reads at revision rev, or with rev 0 each page at the latest, and
// returns the etcd revision when it read the first page.
func (s Scanner) Pages(ctx context.Context, gr schema.GroupResource, after string, rev int64, fn func(page []Object, last string) error) (int64, error) {
	size := s.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	first := int64(0)
	prefix := storage.ListPrefix(gr, "")
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	if after != "" {
		from = after + "\x00"
	}
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(size), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		rctx, cancel := context.WithTimeout(ctx, s.timeout())
		resp, err := s.Client.Get(rctx, from, opts...)
		cancel()
		if err != nil {
			return first, fmt.Errorf("scan %s: %w", prefix, err)
		}
		if first == 0 {
			first = resp.Header.Revision
		}
		if len(resp.Kvs) == 0 {
			return first, nil
		}
		page := make([]Object, len(resp.Kvs))
		for i, kv := range resp.Kvs {
			under, dataKey := keyOf(kv.Value)
			page[i] = Object{Resource: gr, Name: strings.TrimPrefix(string(kv.Key), prefix), Under: under, Rev: kv.ModRevision, DataKey: dataKey}
		}
		last := string(resp.Kvs[len(resp.Kvs)-1].Key)
		if err := fn(page, last); err != nil {
			return first, err
		}
		if !resp.More {
			return first, nil
		}
		from = last + "\x00"
	}
}

// Count is how many objects are under one key.
type Count struct {
	Key   Key `json:"key"`
	Count int `json:"count"`
	// InConfig is whether the resource's rule has the key: one that is
	// not cannot be read.
	InConfig bool `json:"inConfig"`
}

// Resource is what the configuration says of one resource, and where its
// objects are.
type Resource struct {
	Resource string `json:"resource"`
	Rule
	WriteKey Key     `json:"writeKey"`
	Objects  int     `json:"objects"`
	Counts   []Count `json:"counts"`
}

// Encrypted is whether the resource's writes are encrypted: then none of
// its objects may be in plain text.
func (r Resource) Encrypted() bool { return r.WriteKey.Encrypts() }

// Problem is an object that verify refuses.
type Problem struct {
	Resource string `json:"resource"`
	// Name is the object's, namespace/name; empty for a problem of the
	// configuration itself.
	Name   string `json:"name,omitempty"`
	Under  Key    `json:"under"`
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	if p.Name == "" {
		return p.Resource + " " + p.Reason
	}
	return fmt.Sprintf("%s %s %s", p.Resource, p.Name, p.Reason)
}

// Report is the state of encryption at rest at one etcd revision.
type Report struct {
	Revision  int64      `json:"revision"`
	Resources []Resource `json:"resources"`
	// Problems are the objects of an encrypted resource in plain text,
	// and those under a key the configuration does not have.
	Problems []Problem `json:"problems,omitempty"`
}

// KMSProbe asks the plugin of the KMS v2 provider named in cfg whether it
// can still open dataKey, a data key it sealed: nil if it can,
// ErrCannotOpen (wrapped, with the plugin's reason) if it answers that it
// cannot, any other error if it could not be asked.
type KMSProbe func(ctx context.Context, cfg *Config, provider string, dataKey *kmstypes.EncryptedObject) error

// ErrCannotOpen is a KMS plugin's refusal to open a data key: the key
// that sealed it is gone from the plugin.
var ErrCannotOpen = errors.New("the plugin cannot open the data key")

// Status scans the resources cfg covers among stored, the resources the
// server stores, and counts their objects under each key. With probe, it
// also asks each KMS v2 plugin, once per key id found, whether it can
// still open what is stored under it: the configuration names a KMS
// provider, not the plugin's keys, so a key removed from the plugin shows
// only so.
func Status(ctx context.Context, s Scanner, cfg *Config, stored []schema.GroupResource, probe KMSProbe) (*Report, error) {
	var covered []schema.GroupResource
	byResource := map[schema.GroupResource]*Resource{}
	var order []*Resource
	for _, gr := range stored {
		rule, ok := cfg.RuleFor(gr)
		if !ok {
			continue
		}
		r := &Resource{Resource: gr.String(), Rule: rule, WriteKey: rule.WriteKey()}
		for _, k := range rule.Keys {
			r.Counts = append(r.Counts, Count{Key: k, InConfig: true})
		}
		if !rule.Has(Plain) {
			r.Counts = append(r.Counts, Count{Key: Plain})
		}
		covered = append(covered, gr)
		byResource[gr] = r
		order = append(order, r)
	}
	report := &Report{}
	// The API server refuses such a configuration; whatever etcd holds,
	// the file is wrong.
	if r, ok := cfg.RuleFor(secrets); !ok || !r.WriteKey().Encrypts() {
		report.Problems = append(report.Problems, Problem{Resource: secrets.String(), Under: Plain,
			Reason: "would be written in plain text: the configuration does not encrypt them, and the API server refuses to load it"})
	}
	// opens holds each KMS key id's answer: nil, or why it cannot be
	// opened.
	opens := map[Key]error{}
	rev, err := s.Scan(ctx, covered, 0, func(o Object) error {
		r := byResource[o.Resource]
		if probe != nil && o.DataKey != nil && r.Rule.Has(o.Under) {
			why, asked := opens[o.Under]
			if !asked {
				why = probe(ctx, cfg, o.Under.Name, o.DataKey)
				if why != nil && !errors.Is(why, ErrCannotOpen) {
					return fmt.Errorf("asking the plugin of %s: %w", o.Under, why)
				}
				opens[o.Under] = why
			}
			if why != nil {
				report.Problems = append(report.Problems, Problem{Resource: r.Resource, Name: o.Name, Under: o.Under,
					Reason: fmt.Sprintf("is stored under %s, which its KMS plugin no longer holds: %v", o.Under, why)})
			}
		}
		r.Objects++
		i := slices.IndexFunc(r.Counts, func(c Count) bool { return c.Key == o.Under })
		if i < 0 {
			r.Counts = append(r.Counts, Count{Key: o.Under, InConfig: r.Rule.Has(o.Under)})
			i = len(r.Counts) - 1
		}
		r.Counts[i].Count++
		switch {
		case !r.Rule.Has(o.Under) && o.Under.Encrypts():
			report.Problems = append(report.Problems, Problem{Resource: r.Resource, Name: o.Name, Under: o.Under,
				Reason: fmt.Sprintf("is stored under %s, which is not in the configuration", o.Under)})
		case !o.Under.Encrypts() && r.Encrypted():
			report.Problems = append(report.Problems, Problem{Resource: r.Resource, Name: o.Name, Under: o.Under,
				Reason: fmt.Sprintf("is stored in plain text; its resource is written under %s", r.WriteKey)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	report.Revision = rev
	for _, r := range order {
		// A KMS key with its objects counted by key id needs no line of
		// its own.
		r.Counts = slices.DeleteFunc(r.Counts, func(c Count) bool {
			return c.Count == 0 && c.Key.Provider == KMS && slices.ContainsFunc(r.Counts, func(d Count) bool {
				return d.Key.KeyID != "" && d.Key.Provider == c.Key.Provider && d.Key.Name == c.Key.Name
			})
		})
		report.Resources = append(report.Resources, *r)
	}
	return report, nil
}
