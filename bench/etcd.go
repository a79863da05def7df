package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"path"
)

// etcdPrefix is where the raw puts go: under /registry/, the only prefix
// the API server's etcd identity may write, and beside no resource.
const etcdPrefix = "/registry/trustplane-bench/"

// etcdPut puts Requests raw values, each as large as one Secret of the
// create phase as the API server stored it (encrypted, encoded), so that
// the ratio of the two rates compares writes of the same size.
func (r *run) etcdPut(ctx context.Context) (Result, error) {
	size, err := r.storedSecretSize(ctx)
	if err != nil {
		return Result{}, err
	}
	value := make([]byte, size)
	if _, err := rand.Read(value); err != nil {
		return Result{}, fmt.Errorf("etcd value: %w", err)
	}
	// Cleaned up even if the first put fails half-way.
	r.etcdPrefix = etcdPrefix + r.Namespace + "/"
	v := string(value)
	samples, elapsed, err := runOps(ctx, r.Requests, r.Concurrency, r.Timeout, func(ctx context.Context, i int) error {
		key := fmt.Sprintf("%s%06d", r.etcdPrefix, i)
		if _, err := r.Etcd.Put(ctx, key, v); err != nil {
			return fmt.Errorf("etcd put %s: %w", key, err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	res := summarize(PhaseEtcdPut, r.Requests, elapsed, samples)
	res.Bytes = size
	return res, nil
}

// storedSecretSize reads the first Secret of the create phase raw from
// etcd, at the key kube-apiserver's layout gives it.
func (r *run) storedSecretSize(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	key := path.Join("/registry/secrets", r.Namespace, secretName(0))
	resp, err := r.Etcd.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("etcd get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("etcd get %s: no such key; is this the cluster's etcd?", key)
	}
	return len(resp.Kvs[0].Value), nil
}
