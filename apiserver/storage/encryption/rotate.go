package encryption

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
	kmsservice "k8s.io/kms/pkg/service"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// JournalKey holds the journal of the rotation in progress, if any: a
// rotation that is stopped continues from it on the next run. It holds
// key names and progress, never key material.
const JournalKey = storage.Prefix + "trustplane.io/encryption-rotation"

// The phases of a rotation, in order. Each is done when the journal
// moves past it; redoing one that was done changes nothing.
const (
	// phaseAdding: the new key goes into the file, second: every
	// server can read what it protects before any writes with it.
	phaseAdding = "adding"
	// phaseAdded: every server has loaded the new key; it becomes the
	// write key.
	phaseAdded = "added"
	// phasePromoted: every server has loaded the new write key; the
	// objects are rewritten.
	phasePromoted = "promoted"
	// phaseRewriting: every object not under the new key is written
	// again through the API, from the journal's resource and key on.
	phaseRewriting = "rewriting"
	// phaseVerifying: a scan finds nothing under another key, or sends
	// the rotation back to rewriting.
	phaseVerifying = "verifying"
	// phaseRemoving: the old keys leave the file; once every server has
	// loaded it, the journal is deleted.
	phaseRemoving = "removing"
	// phaseKeyID, of a KMS rotation only, instead of the first three:
	// the plugin has a new key id, which the API servers take from its
	// Status within a minute; objects are rewritten once one is written
	// under it.
	phaseKeyID = "key-id"
)

type journal struct {
	Phase  string `json:"phase"`
	NewKey string `json:"newKey"`
	// KMS, for a rotation to a KMS v2 plugin's new key, is the
	// provider's name; NewKey is then the plugin's key id.
	KMS string `json:"kms,omitempty"`
	// Rules are the indexes, in the file, of the rules rotated.
	Rules []int `json:"rules"`
	// Resources are the resources of those rules, rewritten in order;
	// Resource and After say where rewriting stopped: the last etcd key
	// done in Resource.
	Resources []string `json:"resources"`
	Resource  string   `json:"resource,omitempty"`
	After     string   `json:"after,omitempty"`
	// Passes counts the rewrites that verify sent back.
	Passes int `json:"passes"`
	// Rewritten counts the objects written again so far.
	Rewritten int `json:"rewritten"`

	rev int64 // the journal's etcd ModRevision
}

// newKey is the key the rotation leaves every object under.
func (j *journal) newKey() Key {
	if j.KMS != "" {
		return Key{Provider: KMS, Name: j.KMS, KeyID: j.NewKey}
	}
	return Key{Provider: AESGCM, Name: j.NewKey}
}

// Rewriter writes an object back through the API as it is, so that the
// API server stores it under its write key, if it is still at revision
// rev (its resourceVersion); if it is not, the error is ErrChanged. An
// object gone is no error.
type Rewriter interface {
	Rewrite(ctx context.Context, gr schema.GroupResource, namespace, name string, rev int64) error
}

// Rotation replaces the AES-GCM write key of every rule whose first
// provider is AES-GCM, in the steps kube's documentation lists: a new key
// added as read-only, loaded by every API server; made the write key,
// loaded by every server; every object rewritten through the API; a scan
// that finds none left under another key; the old keys removed.
//
// With no such rule, it rewrites the objects of the rules whose first
// provider is KMS v2 under the plugin's key id of the time, which the
// plugin's Status reports (after a rotation of the plugin's own key):
// once an object written again is under it, every object is, and a scan
// finds none left under another key id. The plugin's old keys are the
// plugin's to remove.
type Rotation struct {
	ConfigPath string
	// Etcd is a client with the API server's etcd identity: it reads the
	// servers' records and the values, and keeps the journal.
	Etcd    *clientv3.Client
	Scanner Scanner
	// Rewriter writes objects back through the API.
	Rewriter Rewriter
	// Stored are the resources the API server keeps in etcd.
	Stored []schema.GroupResource
	// Workers rewrite objects at once; 0 is 1.
	Workers int
	// WaitTimeout bounds each wait for the API servers to load the file.
	WaitTimeout time.Duration
	// Progress is told each step, a line each.
	Progress io.Writer
	// KeyID asks the KMS v2 plugin at endpoint its key id (Status); nil
	// is a gRPC client of the k8s.io/kms API.
	KeyID func(ctx context.Context, endpoint string) (string, error)
}

// MaxPasses bounds the rewrites that verify sends back: objects that
// stay under an old key after as many are written under it by something
// that is not an API server with the new configuration.
const MaxPasses = 3

// Run rotates, or continues the rotation its journal records.
func (r *Rotation) Run(ctx context.Context) error {
	j, err := r.loadJournal(ctx)
	if err != nil {
		return err
	}
	if j == nil {
		if j, err = r.begin(ctx); err != nil {
			return err
		}
		r.say("rotating to %s (resources: %s)", j.newKey(), strings.Join(j.Resources, ", "))
	} else {
		r.say("continuing the rotation to %s at %s", j.newKey(), j.Phase)
		if err := r.followKeyID(ctx, j); err != nil {
			return err
		}
	}
	for {
		var next string
		var err error
		switch j.Phase {
		case phaseAdding:
			next, err = r.editFile(ctx, j, (*configFile).addKey, phaseAdded, "added key %s as read-only")
		case phaseAdded:
			if err = r.waitLoaded(ctx); err == nil {
				next, err = r.editFile(ctx, j, (*configFile).promote, phasePromoted, "made key %s the write key")
			}
		case phasePromoted:
			if err = r.waitLoaded(ctx); err == nil {
				j.Resource, j.After = "", ""
				next = phaseRewriting
			}
		case phaseKeyID:
			if err = r.waitKeyID(ctx, j); err == nil {
				j.Resource, j.After = "", ""
				next = phaseRewriting
			}
		case phaseRewriting:
			if err = r.rewrite(ctx, j); err == nil {
				next = phaseVerifying
			}
		case phaseVerifying:
			next, err = r.verify(ctx, j)
		case phaseRemoving:
			if j.KMS != "" {
				if err = r.deleteJournal(ctx, j); err == nil {
					r.say("rotated: %d objects rewritten; every object of the rotated rules is under %s; the plugin's other keys may go (trustplane kms-plugin remove-key)", j.Rewritten, j.newKey())
					return nil
				}
			} else if err = r.finish(ctx, j); err == nil {
				r.say("rotated: %d objects rewritten; aesgcm key %s is the only key of the rotated rules", j.Rewritten, j.NewKey)
				return nil
			}
		default:
			err = fmt.Errorf("rotation journal %s: unknown phase %q", JournalKey, j.Phase)
		}
		if err != nil {
			return err
		}
		j.Phase = next
		if err := r.saveJournal(ctx, j); err != nil {
			return err
		}
	}
}

func (r *Rotation) say(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format+"\n", args...)
	}
}

// begin plans a rotation from the file and records it.
func (r *Rotation) begin(ctx context.Context) (*journal, error) {
	f, err := readConfigFile(r.ConfigPath)
	if err != nil {
		return nil, err
	}
	j := &journal{Phase: phaseAdding, NewKey: f.nextKeyName(), Rules: f.aesgcmRules()}
	if len(j.Rules) == 0 {
		if j, err = r.beginKMS(ctx, f); err != nil {
			return nil, err
		}
	}
	cfg, err := ReadConfig(r.ConfigPath)
	if err != nil {
		return nil, err
	}
	patterns := map[string]bool{}
	for _, i := range j.Rules {
		for _, res := range f.cfg.Resources[i].Resources {
			patterns[res] = true
		}
	}
	for _, gr := range r.Stored {
		if rule, ok := cfg.RuleFor(gr); ok && patterns[rule.Pattern] {
			j.Resources = append(j.Resources, gr.String())
		}
	}
	slices.Sort(j.Resources)
	if err := r.createJournal(ctx, j); err != nil {
		return nil, err
	}
	return j, nil
}

// beginKMS plans the rotation of the rules whose first provider is KMS
// v2, all of one plugin, to the key id its Status reports now.
func (r *Rotation) beginKMS(ctx context.Context, f *configFile) (*journal, error) {
	j := &journal{Phase: phaseKeyID}
	endpoint := ""
	for i, rc := range f.cfg.Resources {
		if len(rc.Providers) == 0 || rc.Providers[0].KMS == nil || rc.Providers[0].KMS.APIVersion != "v2" {
			continue
		}
		p := rc.Providers[0].KMS
		if j.KMS != "" && (p.Name != j.KMS || p.Endpoint != endpoint) {
			return nil, fmt.Errorf("encryption config %s: rules write with KMS v2 providers %s and %s; rotate rotates one plugin's", r.ConfigPath, j.KMS, p.Name)
		}
		j.KMS, endpoint = p.Name, p.Endpoint
		j.Rules = append(j.Rules, i)
	}
	if len(j.Rules) == 0 {
		return nil, fmt.Errorf("encryption config %s: no rule writes with aesgcm or KMS v2; nothing to rotate", r.ConfigPath)
	}
	keyID := r.KeyID
	if keyID == nil {
		keyID = pluginKeyID
	}
	id, err := keyID(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("KMS v2 provider %s: its key id: %w", j.KMS, err)
	}
	j.NewKey = id
	return j, nil
}

// followKeyID moves a KMS rotation that continues to the key id the
// plugin reports now, if it changed since the rotation began (its key was
// rotated again): rewriting under the old one would never end.
func (r *Rotation) followKeyID(ctx context.Context, j *journal) error {
	if j.KMS == "" {
		return nil
	}
	f, err := readConfigFile(r.ConfigPath)
	if err != nil {
		return err
	}
	now, err := r.beginKMS(ctx, f)
	if err != nil {
		return err
	}
	if now.KMS != j.KMS || now.NewKey == j.NewKey {
		return nil
	}
	r.say("the plugin's key id is now %s: rewriting under it", now.NewKey)
	j.NewKey, j.Phase, j.Resource, j.After, j.Passes = now.NewKey, phaseKeyID, "", "", 0
	return r.saveJournal(ctx, j)
}

// pluginKeyID asks the KMS v2 plugin at endpoint its Status, as the API
// server does.
func pluginKeyID(ctx context.Context, endpoint string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	svc, err := kmsv2.NewGRPCService(ctx, endpoint, "rotate", 5*time.Second)
	if err != nil {
		return "", err
	}
	st, err := svc.Status(ctx)
	if err != nil {
		return "", err
	}
	if st.Healthz != "ok" || st.KeyID == "" {
		return "", fmt.Errorf("the plugin is not healthy: %q", st.Healthz)
	}
	return st.KeyID, nil
}

// PluginProbe is the KMSProbe that asks the plugin at the provider's
// endpoint, as the API server does: it sends the data key to Decrypt and
// drops what comes back. Only NotFound, InvalidArgument and
// FailedPrecondition are taken for a refusal (trustplane's plugin answers
// NotFound for a key id it does not hold); any other failure is an error.
// The connections last as long as ctx.
func PluginProbe(ctx context.Context) KMSProbe {
	services := map[string]kmsservice.Service{}
	return func(callCtx context.Context, cfg *Config, provider string, dataKey *kmstypes.EncryptedObject) error {
		endpoint, ok := cfg.KMSEndpoint(provider)
		if !ok {
			return fmt.Errorf("no KMS v2 provider %s in the configuration", provider)
		}
		svc := services[endpoint]
		if svc == nil {
			var err error
			if svc, err = kmsv2.NewGRPCService(ctx, endpoint, provider, 10*time.Second); err != nil {
				return err
			}
			services[endpoint] = svc
		}
		_, err := svc.Decrypt(callCtx, "verify", &kmsservice.DecryptRequest{Ciphertext: dataKey.EncryptedDEKSource, KeyID: dataKey.KeyID, Annotations: dataKey.Annotations})
		switch status.Code(err) {
		case codes.OK:
			return nil
		case codes.NotFound, codes.InvalidArgument, codes.FailedPrecondition:
			// A definite refusal. The plugin's words, bounded and
			// quoted: a plugin sees a sealed data key, a key id and
			// annotations, never a Secret's data, but its message
			// could hold anything.
			msg := status.Convert(err).Message()
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			return fmt.Errorf("%w: %q", ErrCannotOpen, msg)
		}
		// Anything else may be passing (the plugin's own KMS out of
		// reach): the plugin could not be asked.
		return err
	}
}

// waitKeyID waits until the API server writes under the plugin's new key
// id: it rewrites an object not under it, and looks at what it wrote,
// every 5 seconds for at most WaitTimeout. Nothing left to rewrite is
// done.
func (r *Rotation) waitKeyID(ctx context.Context, j *journal) error {
	newKey := j.newKey()
	r.say("waiting for the API servers to write under %s (they ask the plugin's Status every minute)", newKey)
	deadline := time.Now().Add(r.WaitTimeout)
	for {
		o, found, err := r.firstNotUnder(ctx, j)
		if err != nil || !found {
			return err
		}
		if err := r.rewriteOne(ctx, o, newKey); err != nil {
			return err
		}
		namespace, name, ok := strings.Cut(o.Name, "/")
		if !ok {
			namespace, name = "", o.Name
		}
		getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := r.Etcd.Get(getCtx, storage.Key(o.Resource, namespace, name))
		cancel()
		if err != nil {
			return fmt.Errorf("read %s %s again: %w", o.Resource, o.Name, err)
		}
		if len(resp.Kvs) == 1 && KeyOf(resp.Kvs[0].Value) == newKey {
			r.say("the API server writes under %s", newKey)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server still writes under another key than %s after %s: does it run the plugin's new key? (it asks every minute)", newKey, r.WaitTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
}

// editFile applies edit to each rotated rule, writes the file if that
// changed it, and moves on to next.
func (r *Rotation) editFile(ctx context.Context, j *journal, edit func(f *configFile, rule int, key string) (bool, error), next, done string) (string, error) {
	f, err := readConfigFile(r.ConfigPath)
	if err != nil {
		return "", err
	}
	changed := false
	for _, i := range j.Rules {
		if i >= len(f.cfg.Resources) || len(f.cfg.Resources[i].Providers) == 0 || f.cfg.Resources[i].Providers[0].AESGCM == nil {
			return "", fmt.Errorf("encryption config %s: rule %d no longer starts with aesgcm; it changed during the rotation", r.ConfigPath, i)
		}
		did, err := edit(f, i, j.NewKey)
		if err != nil {
			return "", err
		}
		changed = changed || did
	}
	if changed {
		if err := f.write(); err != nil {
			return "", err
		}
	}
	r.say(done, j.NewKey)
	return next, ctx.Err()
}

// waitLoaded waits until every API server that records its configuration
// runs the file as it is now.
func (r *Rotation) waitLoaded(ctx context.Context) error {
	want, err := fileHash(r.ConfigPath)
	if err != nil {
		return err
	}
	r.say("waiting for the API servers to load %s", want)
	deadline := time.Now().Add(r.WaitTimeout)
	for {
		getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := r.Etcd.Get(getCtx, storage.EncryptionServersPrefix, clientv3.WithPrefix())
		cancel()
		if err != nil {
			return fmt.Errorf("read the API servers' encryption records: %w", err)
		}
		var behind []string
		for _, kv := range resp.Kvs {
			var rec storage.EncryptionServer
			if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.Hash != want {
				behind = append(behind, fmt.Sprintf("%s runs %s", strings.TrimPrefix(string(kv.Key), storage.EncryptionServersPrefix), rec.Hash))
			}
		}
		switch {
		case len(resp.Kvs) > 0 && len(behind) == 0:
			r.say("%d API servers run it", len(resp.Kvs))
			return nil
		case time.Now().After(deadline) && len(resp.Kvs) == 0:
			return fmt.Errorf("no API server records its encryption configuration in etcd: is one running? (waited %s)", r.WaitTimeout)
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d API servers have not loaded %s within %s: %s", len(behind), len(resp.Kvs), want, r.WaitTimeout, strings.Join(behind, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// rewrite writes again, through the API, every object of the rotated
// resources that is not under the new key, a page at a time, recording
// after each page where it is.
func (r *Rotation) rewrite(ctx context.Context, j *journal) error {
	newKey := j.newKey()
	workers := max(r.Workers, 1)
	// For the progress: what is left when this run starts.
	_, left, err := r.notUnder(ctx, j)
	if err != nil {
		return err
	}
	done := 0
	start := 0
	if j.Resource != "" {
		start = slices.Index(j.Resources, j.Resource)
		if start < 0 {
			return fmt.Errorf("rotation journal %s: resource %s is not one it rotates", JournalKey, j.Resource)
		}
	}
	began := time.Now()
	for _, res := range j.Resources[start:] {
		gr := schema.ParseGroupResource(res)
		after := ""
		if res == j.Resource {
			after = j.After
		}
		_, err := r.Scanner.Pages(ctx, gr, after, 0, func(page []Object, last string) error {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(workers)
			n := 0
			for _, o := range page {
				if o.Under == newKey {
					continue
				}
				n++
				g.Go(func() error { return r.rewriteOne(gctx, o, newKey) })
			}
			if err := g.Wait(); err != nil {
				return err
			}
			j.Resource, j.After = res, last
			j.Rewritten += n
			if err := r.saveJournal(ctx, j); err != nil {
				return err
			}
			done += n
			r.say("%s: rewrote %d objects %s %d of %d (%d%%), %.0f objects/s", res, n, progressBar(done, len(left)), done, len(left), 100*done/max(len(left), 1), rate(done, time.Since(began)))
			return nil
		})
		if err != nil {
			return err
		}
	}
	elapsed := time.Since(began)
	r.say("rewrote %d objects in %s: %.0f objects/s", done, elapsed.Round(time.Millisecond), rate(done, elapsed))
	return nil
}

// rewriteOne rewrites o, held to the revision the scan read it at. When
// it changed since, its value is read again from etcd: gone, or written
// under the new key by the write that changed it, it is done; else it is
// rewritten at its new revision, at most MaxConflicts times.
func (r *Rotation) rewriteOne(ctx context.Context, o Object, newKey Key) error {
	namespace, name, namespaced := strings.Cut(o.Name, "/")
	if !namespaced {
		namespace, name = "", o.Name
	}
	key := storage.Key(o.Resource, namespace, name)
	rev := o.Rev
	for conflicts := 0; ; conflicts++ {
		err := r.Rewriter.Rewrite(ctx, o.Resource, namespace, name, rev)
		if !errors.Is(err, ErrChanged) {
			return err
		}
		if conflicts >= MaxConflicts {
			return fmt.Errorf("rewrite %s %s: it changed %d times while being rewritten", o.Resource, o.Name, conflicts+1)
		}
		getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := r.Etcd.Get(getCtx, key)
		cancel()
		if err != nil {
			return fmt.Errorf("rewrite %s %s: read it again: %w", o.Resource, o.Name, err)
		}
		if len(resp.Kvs) == 0 || KeyOf(resp.Kvs[0].Value) == newKey {
			return nil
		}
		rev = resp.Kvs[0].ModRevision
	}
}

// MaxConflicts bounds the times one object is found changed while being
// rewritten.
const MaxConflicts = 20

// progressBar is a bar of 20 cells, done of total filled.
func progressBar(done, total int) string {
	const cells = 20
	filled := cells
	if total > 0 {
		filled = min(cells, cells*done/total)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", cells-filled) + "]"
}

// rate is n per second over d.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// verify scans the rotated resources: with every object under the new
// key, the old keys can go; else back to rewriting, at most MaxPasses
// times.
func (r *Rotation) verify(ctx context.Context, j *journal) (string, error) {
	rev, objects, err := r.notUnder(ctx, j)
	if err != nil {
		return "", err
	}
	left := make([]string, len(objects))
	for i, o := range objects {
		left[i] = fmt.Sprintf("%s %s (%s)", o.Resource, o.Name, o.Under)
	}
	if len(left) == 0 {
		r.say("verified: every object of %s is under %s at etcd revision %d", strings.Join(j.Resources, ", "), j.newKey(), rev)
		return phaseRemoving, nil
	}
	j.Passes++
	if j.Passes >= MaxPasses {
		return "", fmt.Errorf("after %d passes, %d objects are still not under %s, the old keys stay: %s", j.Passes, len(left), j.newKey(), strings.Join(left[:min(len(left), 10)], "; "))
	}
	r.say("%d objects are still not under %s; rewriting again", len(left), j.newKey())
	j.Resource, j.After = "", ""
	return phaseRewriting, nil
}

// finish removes the old keys from the file, waits until every server
// runs it, forgets the old keys' wear and deletes the journal.
func (r *Rotation) finish(ctx context.Context, j *journal) error {
	if _, err := r.editFile(ctx, j, (*configFile).removeOthers, phaseRemoving, "removed every key of the rotated rules but %s"); err != nil {
		return err
	}
	if err := r.waitLoaded(ctx); err != nil {
		return err
	}
	if err := r.forgetWear(ctx); err != nil {
		return err
	}
	return r.deleteJournal(ctx, j)
}

// forgetWear deletes the write counts of the AES-GCM keys the file no
// longer has: a key of the same name later starts from zero.
func (r *Rotation) forgetWear(ctx context.Context) error {
	f, err := readConfigFile(r.ConfigPath)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, rc := range f.cfg.Resources {
		for _, p := range rc.Providers {
			for _, k := range aesKeys(p.AESGCM) {
				keep[k.Name] = true
			}
		}
	}
	getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := r.Etcd.Get(getCtx, storage.WearPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("read key wear: %w", err)
	}
	for _, kv := range resp.Kvs {
		if name := strings.TrimPrefix(string(kv.Key), storage.WearPrefix); !keep[name] {
			if _, err := r.Etcd.Delete(getCtx, string(kv.Key)); err != nil {
				return fmt.Errorf("forget the wear of key %s: %w", name, err)
			}
		}
	}
	return nil
}

// notUnder are the objects of the rotated resources not under the new
// key, at the etcd revision it returns.
func (r *Rotation) notUnder(ctx context.Context, j *journal) (int64, []Object, error) {
	newKey := j.newKey()
	var grs []schema.GroupResource
	for _, res := range j.Resources {
		grs = append(grs, schema.ParseGroupResource(res))
	}
	var left []Object
	rev, err := r.Scanner.Scan(ctx, grs, 0, func(o Object) error {
		if o.Under != newKey {
			left = append(left, o)
		}
		return nil
	})
	return rev, left, err
}

// firstNotUnder is the first object of the rotated resources not under
// the new key, if any.
func (r *Rotation) firstNotUnder(ctx context.Context, j *journal) (Object, bool, error) {
	newKey := j.newKey()
	var first Object
	found := errors.New("found")
	for _, res := range j.Resources {
		_, err := r.Scanner.Pages(ctx, schema.ParseGroupResource(res), "", 0, func(page []Object, _ string) error {
			for _, o := range page {
				if o.Under != newKey {
					first = o
					return found
				}
			}
			return nil
		})
		if errors.Is(err, found) {
			return first, true, nil
		}
		if err != nil {
			return Object{}, false, err
		}
	}
	return Object{}, false, nil
}

func (r *Rotation) loadJournal(ctx context.Context) (*journal, error) {
	getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := r.Etcd.Get(getCtx, JournalKey)
	if err != nil {
		return nil, fmt.Errorf("read the rotation journal: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var j journal
	if err := json.Unmarshal(resp.Kvs[0].Value, &j); err != nil {
		return nil, fmt.Errorf("rotation journal %s: %w", JournalKey, err)
	}
	j.rev = resp.Kvs[0].ModRevision
	return &j, nil
}

// errJournalMoved is a journal another run changed: two rotations at
// once would undo each other's steps.
var errJournalMoved = errors.New("the rotation journal changed under this run: is another rotate running?")

func (r *Rotation) createJournal(ctx context.Context, j *journal) error {
	return r.putJournal(ctx, j, clientv3.Compare(clientv3.CreateRevision(JournalKey), "=", 0))
}

func (r *Rotation) saveJournal(ctx context.Context, j *journal) error {
	return r.putJournal(ctx, j, clientv3.Compare(clientv3.ModRevision(JournalKey), "=", j.rev))
}

func (r *Rotation) putJournal(ctx context.Context, j *journal, cond clientv3.Cmp) error {
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	txnCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := r.Etcd.Txn(txnCtx).If(cond).Then(clientv3.OpPut(JournalKey, string(data))).Commit()
	if err != nil {
		return fmt.Errorf("write the rotation journal: %w", err)
	}
	if !resp.Succeeded {
		return errJournalMoved
	}
	j.rev = resp.Header.Revision
	return nil
}

func (r *Rotation) deleteJournal(ctx context.Context, j *journal) error {
	txnCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := r.Etcd.Txn(txnCtx).If(clientv3.Compare(clientv3.ModRevision(JournalKey), "=", j.rev)).Then(clientv3.OpDelete(JournalKey)).Commit()
	if err != nil {
		return fmt.Errorf("delete the rotation journal: %w", err)
	}
	if !resp.Succeeded {
		return errJournalMoved
	}
	return nil
}
