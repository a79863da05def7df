package apiserver

import (
	"fmt"
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

func tappedString(reqs []tappedRequest) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "\t%s\n", r)
	}
	return b.String()
}
