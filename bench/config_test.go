package bench

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestConfigDefaults(t *testing.T) {
	// Never called: only its presence is checked.
	client := &kubernetes.Clientset{}
	rc := &rest.Config{}
	got, err := Config{Client: client, REST: rc}.withDefaults()
	if err != nil {
		t.Fatalf("withDefaults() of an empty config: %v", err)
	}
	if got.Concurrency != DefaultConcurrency || got.Requests != DefaultRequests || got.ObjectBytes != DefaultObjectBytes ||
		got.Watchers != DefaultWatchers || got.WatchEvents != DefaultWatchEvents || got.Timeout != DefaultTimeout || got.Logger == nil ||
		got.ListObjects != DefaultListObjects || got.ListRequests != DefaultListRequests ||
		got.WatchRate != DefaultWatchRate || got.WideConnections != DefaultWideConnections || got.WideWatchEvents != DefaultWideWatchEvents ||
		got.WideWatchRate != DefaultWideWatchRate {
		t.Errorf("withDefaults() = %+v, want every default", got)
	}
	if !strings.HasPrefix(got.Namespace, "trustplane-bench-") || len(got.Namespace) != len("trustplane-bench-")+8 {
		t.Errorf("generated namespace %q, want trustplane-bench- and 8 random hex digits", got.Namespace)
	}
	if again, _ := (Config{Client: client, REST: rc}).withDefaults(); again.Namespace == got.Namespace {
		t.Errorf("two runs got the same namespace %q", got.Namespace)
	}

	given := Config{Client: client, REST: rc, Namespace: "mine", Concurrency: 1, Requests: 2, ObjectBytes: 3, Watchers: 4, WatchEvents: 5, Timeout: time.Second,
		ListObjects: 8, ListRequests: 9}
	if got, err := given.withDefaults(); err != nil || got.Namespace != "mine" || got.Concurrency != 1 || got.Requests != 2 ||
		got.ObjectBytes != 3 || got.Watchers != 4 || got.WatchEvents != 5 || got.Timeout != time.Second || got.ListObjects != 8 || got.ListRequests != 9 {
		t.Errorf("withDefaults() = %+v, %v, want the values given", got, err)
	}

	// The wide phase needs REST, to make clients of its own; only a
	// hold runs without it.
	if got, _ := (Config{Client: client, Hold: 7}).withDefaults(); got.WideWatchers >= 0 {
		t.Errorf("withDefaults() without REST: %d wide watchers, want the phase skipped", got.WideWatchers)
	}
	if got, _ := (Config{Client: client, REST: &rest.Config{}}).withDefaults(); got.WideWatchers != DefaultWideWatchers {
		t.Errorf("withDefaults() with REST: %d wide watchers, want %d", got.WideWatchers, DefaultWideWatchers)
	}

	if got, err := (Config{Client: client, Hold: 7, WatchList: true}).withDefaults(); err != nil || got.Hold != 7 || !got.WatchList {
		t.Errorf("withDefaults() = %+v, %v, want the hold given", got, err)
	}

	_, err = Config{Concurrency: -1, Requests: -2, ObjectBytes: -3, Watchers: -4, WatchEvents: -5, WatchRate: -7, Timeout: -time.Second, Hold: -6,
		ListObjects: -8, ListRequests: -9}.withDefaults()
	for _, want := range []string{"no client", "no client configuration for the large lists", "list objects must be positive, got -8", "list requests must be positive, got -9", "watch rate must be between 0 and 1e+06, got -7", "concurrency must be positive, got -1", "requests must be positive, got -2",
		"object bytes must be positive, got -3", "watchers must be positive, got -4", "watch events must be positive, got -5", "timeout must be positive, got -1s",
		"hold must not be negative, got -6"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("withDefaults() of a bad config = %v, want it to say %q", err, want)
		}
	}

	if _, err := (Config{Client: client, REST: rc, WatchList: true}).withDefaults(); err == nil || !strings.Contains(err.Error(), "watch list is for the hold phase") {
		t.Errorf("withDefaults() of a watch list without hold = %v, want an error", err)
	}
}
