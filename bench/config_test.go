package bench

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

func TestConfigDefaults(t *testing.T) {
	// Never called: only its presence is checked.
	client := &kubernetes.Clientset{}
	got, err := Config{Client: client}.withDefaults()
	if err != nil {
		t.Fatalf("withDefaults() of an empty config: %v", err)
	}
	if got.Concurrency != DefaultConcurrency || got.Requests != DefaultRequests || got.ObjectBytes != DefaultObjectBytes ||
		got.Watchers != DefaultWatchers || got.WatchEvents != DefaultWatchEvents || got.Timeout != DefaultTimeout || got.Logger == nil {
		t.Errorf("withDefaults() = %+v, want every default", got)
	}
	if !strings.HasPrefix(got.Namespace, "trustplane-bench-") || len(got.Namespace) != len("trustplane-bench-")+8 {
		t.Errorf("generated namespace %q, want trustplane-bench- and 8 random hex digits", got.Namespace)
	}
	if again, _ := (Config{Client: client}).withDefaults(); again.Namespace == got.Namespace {
		t.Errorf("two runs got the same namespace %q", got.Namespace)
	}

	given := Config{Client: client, Namespace: "mine", Concurrency: 1, Requests: 2, ObjectBytes: 3, Watchers: 4, WatchEvents: 5, Timeout: time.Second}
	if got, err := given.withDefaults(); err != nil || got.Namespace != "mine" || got.Concurrency != 1 || got.Requests != 2 ||
		got.ObjectBytes != 3 || got.Watchers != 4 || got.WatchEvents != 5 || got.Timeout != time.Second {
		t.Errorf("withDefaults() = %+v, %v, want the values given", got, err)
	}

	_, err = Config{Concurrency: -1, Requests: -2, ObjectBytes: -3, Watchers: -4, WatchEvents: -5, WatchRate: -6, Timeout: -time.Second}.withDefaults()
	for _, want := range []string{"no client", "watch rate must be between 0 and 1e+06, got -6", "concurrency must be positive, got -1", "requests must be positive, got -2",
		"object bytes must be positive, got -3", "watchers must be positive, got -4", "watch events must be positive, got -5", "timeout must be positive, got -1s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("withDefaults() of a bad config = %v, want it to say %q", err, want)
		}
	}
}
