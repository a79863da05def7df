package handlers

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestEncodingCache(t *testing.T) {
	objs := map[string]runtime.Object{}
	for _, name := range []string{"a", "b", "c"} {
		objs[name] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	// A copy is another object: the cache knows objects by identity.
	objs["a copy"] = objs["a"].DeepCopyObject()
	type step struct {
		obj, typ, mediaType string
		fail                bool // the encoding fails
		encoded             bool // the encoding runs
	}
	for _, tt := range []struct {
		name  string
		size  int
		steps []step
	}{
		{"an event is encoded once per type and format", 10, []step{
			{"a", "ADDED", "application/json", false, true},
			{"a", "ADDED", "application/json", false, false},
			{"a", "MODIFIED", "application/json", false, true},
			{"a", "ADDED", "application/yaml", false, true},
			{"a copy", "ADDED", "application/json", false, true},
			{"a", "ADDED", "application/json", false, false},
		}},
		{"a failed encoding is not remembered", 10, []step{
			{"a", "ADDED", "application/json", true, true},
			{"a", "ADDED", "application/json", true, true},
			{"a", "ADDED", "application/json", false, true},
			{"a", "ADDED", "application/json", false, false},
		}},
		{"at most size events, the oldest dropped", 2, []step{
			{"a", "ADDED", "application/json", false, true},
			{"b", "ADDED", "application/json", false, true},
			// Asking again does not keep a longer.
			{"a", "ADDED", "application/json", false, false},
			{"c", "ADDED", "application/json", false, true}, // drops a
			{"b", "ADDED", "application/json", false, false},
			{"c", "ADDED", "application/json", false, false},
			{"a", "ADDED", "application/json", false, true}, // drops b
			{"b", "ADDED", "application/json", false, true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newEncodingCache(tt.size)
			for i, s := range tt.steps {
				want := fmt.Sprintf("%s %s %s", s.obj, s.typ, s.mediaType)
				encoded := false
				got, err := c.get(objs[s.obj], s.typ, s.mediaType, func() ([]byte, error) {
					encoded = true
					if s.fail {
						return nil, errors.New("cannot encode")
					}
					return []byte(want), nil
				})
				if encoded != s.encoded || (err != nil) != s.fail || (err == nil && string(got) != want) {
					t.Errorf("step %d, %s: %q, %v, encoded %v; want %q, failed %v, encoded %v", i, want, got, err, encoded, want, s.fail, s.encoded)
				}
				if n := c.entries.Len(); n > tt.size {
					t.Errorf("step %d: %d encodings remembered, size %d", i, n, tt.size)
				}
			}
		})
	}
}

// The watchers of one event send the same bytes, even those that encoded
// it at the same time.
func TestEncodingCacheShared(t *testing.T) {
	c := newEncodingCache(10)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	const watchers = 8
	// Each encoding waits until every watcher is encoding, so that none
	// finds another's encoding before it encodes its own.
	var encoding sync.WaitGroup
	encoding.Add(watchers)
	encode := func() ([]byte, error) {
		encoding.Done()
		encoding.Wait()
		return []byte("frame"), nil
	}
	frames := make([][]byte, watchers)
	var wg sync.WaitGroup
	for i := range watchers {
		wg.Go(func() {
			frames[i], _ = c.get(obj, "ADDED", "application/json", encode)
		})
	}
	wg.Wait()
	for i, f := range frames {
		if len(f) == 0 || &f[0] != &frames[0][0] {
			t.Errorf("watcher %d sends its own encoding %q", i, f)
		}
	}
}

func TestEncodingCacheHoldsOne(t *testing.T) {
	c := newEncodingCache(0)
	obj := &corev1.ConfigMap{}
	for i, want := range []bool{true, false} {
		encoded := false
		if _, err := c.get(obj, "ADDED", "application/json", func() ([]byte, error) { encoded = true; return []byte("frame"), nil }); err != nil || encoded != want {
			t.Errorf("get %d: encoded %v, %v; want encoded %v", i, encoded, err, want)
		}
	}
}

// BenchmarkEncodingCache measures the lookups of a thousand watchers of
// each event (fan-out), and events that are each new (churn).
func BenchmarkEncodingCache(b *testing.B) {
	objs := make([]runtime.Object, 8192)
	for i := range objs {
		objs[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}}
	}
	frame := []byte("frame")
	encode := func() ([]byte, error) { return frame, nil }
	b.Run("fan-out", func(b *testing.B) {
		c := newEncodingCache(4096)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := c.get(objs[(i/1000)%len(objs)], "MODIFIED", "application/json", encode); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
	b.Run("churn", func(b *testing.B) {
		c := newEncodingCache(4096)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := c.get(objs[i%len(objs)], "MODIFIED", "application/json", encode); err != nil {
				b.Fatal(err)
			}
		}
	})
}
