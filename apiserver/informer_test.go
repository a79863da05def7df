package apiserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/trustplane/trustplane/etcd/etcdtest"
)

// tappedRequest is a request a client sent and the status it got.
type tappedRequest struct {
	method, path, host string
	query              url.Values
	status             int // 0 if the round trip failed
}

func (r tappedRequest) isWatch() bool { return r.query.Get("watch") == "true" }

// isList is a list, not a watch, of a collection of configmaps or
// namespaces, the kinds these tests inform on.
func (r tappedRequest) isList() bool {
	return r.method == http.MethodGet && !r.isWatch() && (strings.HasSuffix(r.path, "/configmaps") || strings.HasSuffix(r.path, "/namespaces"))
}

func (r tappedRequest) isWatchList() bool {
	return r.isWatch() && r.query.Get("sendInitialEvents") == "true"
}

func (r tappedRequest) String() string {
	return fmt.Sprintf("%s %s%s?%s -> %d", r.method, r.host, r.path, r.query.Encode(), r.status)
}

// tap sits between a client and the API servers, like a load balancer: it
// records every request and its status, sends requests to the server of
// its choice, and can hold watches back, as a network partition would.
type tap struct {
	next http.RoundTripper
	// watchTimeout, if set, replaces the timeoutSeconds of every watch,
	// so that the server ends it soon and the client watches again.
	watchTimeout string

	mu   sync.Mutex      // guards the fields below
	host string          // where requests go; "" leaves them alone
	hold chan struct{}   // when not nil, watches wait for it to close
	held chan<- struct{} // told when a watch starts waiting
	log  []tappedRequest
}

// wrap is a rest.Config WrapTransport.
func (tp *tap) wrap(rt http.RoundTripper) http.RoundTripper {
	tp.next = rt
	return tp
}

func (tp *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	isWatch := req.URL.Query().Get("watch") == "true"
	if isWatch && tp.watchTimeout != "" {
		q := req.URL.Query()
		q.Set("timeoutSeconds", tp.watchTimeout)
		req.URL.RawQuery = q.Encode()
	}
	tp.mu.Lock()
	hold, held := tp.hold, tp.held
	tp.mu.Unlock()
	if isWatch && hold != nil {
		held <- struct{}{}
		select {
		case <-hold:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	tp.mu.Lock()
	if tp.host != "" {
		req.URL.Host, req.Host = tp.host, tp.host
	}
	tp.mu.Unlock()
	resp, err := tp.next.RoundTrip(req)
	r := tappedRequest{method: req.Method, path: req.URL.Path, host: req.URL.Host, query: req.URL.Query()}
	if err == nil {
		r.status = resp.StatusCode
	}
	tp.mu.Lock()
	tp.log = append(tp.log, r)
	tp.mu.Unlock()
	return resp, err
}

// holdWatches makes watches wait until release; the returned channel
// receives when one starts waiting.
func (tp *tap) holdWatches() <-chan struct{} {
	held := make(chan struct{}, 100)
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.hold, tp.held = make(chan struct{}), held
	return held
}

// release lets the held watches, and every request after them, go to
// host.
func (tp *tap) release(host string) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.host = host
	close(tp.hold)
	tp.hold = nil
}

func (tp *tap) requests() []tappedRequest {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.log)
}

// tappedClientset is a clientset for id whose requests go through tp.
func (ts *testServer) tappedClientset(t testing.TB, id *identity, tp *tap) *kubernetes.Clientset {
	t.Helper()
	cfg := ts.restConfig(t, id)
	cfg.Wrap(tp.wrap)
	// Informers do not need the test's warnings in the log.
	cfg.WarningHandler = rest.NoWarnings{}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// An informer starts with a watch-list (client-go's WatchListClient, on by
// default since 1.35) or with a list then a watch, and either way syncs
// what the server holds and follows it.
func TestInformerSyncsAndFollows(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			ts := startServer(t)
			cs := ts.clientset(t, admin)
			ctx := testContext(t)
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "inf"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			tp := &tap{}
			factory := informers.NewSharedInformerFactory(ts.tappedClientset(t, admin, tp), 0)
			nsInformer := factory.Core().V1().Namespaces()
			seen := make(chan string, 10)
			nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) { seen <- obj.(*corev1.Namespace).Name },
			})
			stop := make(chan struct{})
			factory.Start(stop)
			defer func() {
				close(stop)
				factory.Shutdown()
			}()
			for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
				if !ok {
					t.Fatalf("informer %v did not sync", typ)
				}
			}

			// The protocol it started with.
			reqs := tp.requests()
			if len(reqs) == 0 {
				t.Fatal("the informer sent no request")
			}
			first := reqs[0]
			if watchList {
				if !first.isWatchList() || first.query.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) || first.query.Get("allowWatchBookmarks") != "true" || first.status != http.StatusOK {
					t.Errorf("first request %s, want a watch with sendInitialEvents=true, resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true, answered 200", first)
				}
				for _, r := range reqs {
					if r.isList() {
						t.Errorf("a watch-list informer listed: %s", r)
					}
				}
			} else {
				if !first.isList() || first.query.Get("resourceVersion") != "0" || first.status != http.StatusOK {
					t.Errorf("first request %s, want a list with resourceVersion=0, answered 200", first)
				}
				for _, r := range reqs {
					if r.isWatchList() {
						t.Errorf("an informer without watch-list sent %s", r)
					}
				}
			}

			// What it synced: every namespace the server holds.
			list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, ns := range list.Items {
				want = append(want, ns.Name)
			}
			cached, err := nsInformer.Lister().List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ns := range cached {
				got = append(got, ns.Name)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Contains(got, "inf") || !slices.Equal(got, want) {
				t.Errorf("informer holds %v, the server %v; want the same, with inf", got, want)
			}

			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			deadline := time.After(10 * time.Second)
			for {
				select {
				case n := <-seen:
					if n == "later" {
						return
					}
				case <-deadline:
					t.Fatal("informer did not see the new namespace")
				}
			}
		})
	}
}

// An informer whose watch resumes at a resourceVersion the server no
// longer remembers gets 410 Expired, lists again, and ends up with what
// the server holds, including what changed while it was away. Here the
// client fails over to a second API server started meanwhile, whose watch
// cache begins after the informer's resourceVersion: the 410 a restarted
// kube-apiserver answers too.
func TestInformerRelistsAfterWatchExpires(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			e := etcdtest.Start(t)
			a := startServerOn(t, e)
			cs := a.clientset(t, admin)
			ctx := testContext(t)
			cms := cs.CoreV1().ConfigMaps("default")
			for _, name := range []string{"kept", "deleted"} {
				if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			// Watches end after a few seconds, as a server may end them
			// at any time; the informer then watches again from its
			// resourceVersion. Not after one: client-go takes a watch
			// that lasted under a second without events for an error and
			// lists again, and the watch that follows a watch-list's
			// initial events is the rest of its stream.
			tp := &tap{watchTimeout: "3"}
			factory := informers.NewSharedInformerFactoryWithOptions(a.tappedClientset(t, admin, tp), 0, informers.WithNamespace("default"))
			informer := factory.Core().V1().ConfigMaps()
			informer.Informer()
			stop := make(chan struct{})
			factory.Start(stop)
			defer func() {
				close(stop)
				factory.Shutdown()
			}()
			for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
				if !ok {
					t.Fatalf("informer %v did not sync", typ)
				}
			}
			waitForStore(t, informer.Informer().GetStore(), map[string]string{"kept": "1", "deleted": "1"})

			// The informer loses the server: its next watch waits.
			held := tp.holdWatches()
			select {
			case <-held:
			case <-ctx.Done():
				t.Fatal("the informer did not watch again")
			}
			seen := len(tp.requests())
			lastRV := informer.Informer().LastSyncResourceVersion()

			// Meanwhile the objects change, and another server starts.
			if err := cms.Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "created"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"v": "2"}}, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			b := startServerOn(t, e)
			tp.release(strings.TrimPrefix(b.url, "https://"))

			want := map[string]string{"kept": "2", "created": "1"}
			list, err := b.clientset(t, admin).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			onServer := map[string]string{}
			for _, cm := range list.Items {
				onServer[cm.Name] = cm.Data["v"]
			}
			if !maps.Equal(onServer, want) {
				t.Fatalf("the server holds %v, want %v", onServer, want)
			}
			waitForStore(t, informer.Informer().GetStore(), want)

			// It got there by a 410 and a relist, not by a watch.
			after := tp.requests()[seen:]
			expired := slices.IndexFunc(after, func(r tappedRequest) bool { return r.isWatch() && !r.isWatchList() })
			if expired < 0 || after[expired].query.Get("resourceVersion") != lastRV || after[expired].status != http.StatusGone {
				t.Fatalf("requests after the partition:\n%s\nwant first a watch from resourceVersion %s answered 410", tappedString(after), lastRV)
			}
			relisted := slices.IndexFunc(after[expired+1:], func(r tappedRequest) bool {
				if watchList {
					return r.isWatchList() && r.status == http.StatusOK
				}
				return r.isList() && r.status == http.StatusOK
			})
			if relisted < 0 {
				t.Errorf("requests after the partition:\n%s\nwant a relist (watch-list: %v) after the 410", tappedString(after), watchList)
			}
			for _, r := range after {
				if r.host != strings.TrimPrefix(b.url, "https://") {
					t.Errorf("%s went to another server than the second", r)
				}
			}
		})
	}
}

func tappedString(reqs []tappedRequest) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "\t%s\n", r)
	}
	return b.String()
}

// waitForStore waits until the informer's store holds exactly the
// configmaps of want, by name and data["v"].
func waitForStore(t *testing.T, store cache.Store, want map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got map[string]string
	err := waitFor(ctx, func() bool {
		got = map[string]string{}
		for _, obj := range store.List() {
			cm := obj.(*corev1.ConfigMap)
			got[cm.Name] = cm.Data["v"]
		}
		return maps.Equal(got, want)
	})
	if err != nil {
		t.Fatalf("the informer holds %v, want %v", got, want)
	}
}

// waitFor polls cond every 20ms until it holds or ctx is done.
func waitFor(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
