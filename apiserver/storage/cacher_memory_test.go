package storage_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trustplane/trustplane/apiserver/storage"
)

// BenchmarkCacherMemory reports the live heap a watch cache holds per
// ConfigMap of 1 KiB of random bytes with one managed fields entry, as the
// API server writes one: the difference of the live heap, after a
// collection, before a cache is started over b.N ConfigMaps and once it
// has listed them (the embedded etcd's own memory, which grows with the
// writes, is in neither). It is what `trustplane bench --hold` measures from
// the outside, about twice over (Go's collector lets the heap grow to twice
// what is live), less what the rest of the server holds.
//
//	go test ./apiserver/storage -run '^$' -bench CacherMemory -benchtime 20000x
func BenchmarkCacherMemory(b *testing.B) {
	s, _ := newStore(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range b.N {
		g.Go(func() error {
			payload := make([]byte, 1024)
			rand.Read(payload)
			name := fmt.Sprintf("hold-%06d", i)
			now := metav1.Now()
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: "trustplane-bench-0123abcd", UID: "8a7b6c5d-1e2f-4a3b-9c8d-7e6f5a4b3c2d", CreationTimestamp: now,
					ManagedFields: []metav1.ManagedFieldsEntry{{
						Manager: "trustplane-bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
						FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:binaryData":{".":{},"f:payload":{}}}`)},
					}},
				},
				BinaryData: map[string][]byte{"payload": payload},
			}
			return s.Create(gctx, configmaps, storage.Key(configmaps, cm.Namespace, name), cm)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	// A first cache brings etcd's own memory to what reading every
	// object costs it; the second one's is the figure.
	var caches []*storage.Cacher
	var held int64
	for i := range 2 {
		before := liveHeap()
		if i == 1 {
			b.ResetTimer()
		}
		c := startCacher(b, s, 100)
		if err := c.Wait(ctx, s.Written(configmaps)); err != nil {
			b.Fatal(err)
		}
		caches = append(caches, c)
		held = liveHeap() - before
	}
	b.StopTimer()
	b.ReportMetric(float64(held)/float64(b.N), "B/object")
	runtime.KeepAlive(caches)
}

// liveHeap is the heap in use after two full collections: the second
// frees what the first left in sync.Pools, such as gRPC's buffers for the
// pages of a list.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
