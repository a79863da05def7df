package opa

import (
	"context"
	"crypto/sha256"
	"slices"
	"time"
)

// DefaultReloadInterval is how often Watch looks at the policy files.
const DefaultReloadInterval = 2 * time.Second

// Watch reloads p's policies from dirs whenever their .rego files change,
// looking every interval, until ctx is done. A new set is compiled, and its
// tests run, before it is swapped in; one that fails is logged with its
// file and line, and the running set stays.
func (p *Plugin) Watch(ctx context.Context, data *Data, interval time.Duration, dirs ...string) {
	last, _ := fingerprint(dirs)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sum, err := fingerprint(dirs)
		if err != nil {
			p.logger.WarnContext(ctx, "admission policies not read", "err", err)
			continue
		}
		if sum == last {
			continue
		}
		last = sum
		set, err := data.LoadDirs(ctx, dirs...)
		if err != nil {
			p.logger.ErrorContext(ctx, "admission policies changed but not loaded; the running set stays", "err", err)
			continue
		}
		p.Swap(set)
		names := make([]string, 0, len(set.policies))
		for _, pol := range set.policies {
			names = append(names, pol.Name)
		}
		p.logger.InfoContext(ctx, "admission policies reloaded", "policies", names)
	}
}

// fingerprint is a digest of the policy files' names and contents.
func fingerprint(dirs []string) ([sha256.Size]byte, error) {
	files, err := readPolicies(dirs...)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(files[p])
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, nil
}
