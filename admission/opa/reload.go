package opa

import (
	"context"
	"errors"
	"time"
)

// DefaultReloadInterval is how often Watch looks at the policy files.
const DefaultReloadInterval = 2 * time.Second

// Watch reloads p's policies whenever the files read returns (path →
// Rego source) change, reading them every interval, until ctx is done. A
// new set is compiled with data, and its tests run, before it is swapped
// in; one that fails is logged with its file and line, and the running
// set stays.
func (p *Plugin) Watch(ctx context.Context, data *Data, interval time.Duration, read func() (map[string][]byte, error)) {
	// What the running set was compiled from, however long ago.
	last := p.set.Load().source
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		files, err := read()
		if err != nil {
			p.logger.WarnContext(ctx, "admission policies not read", "err", err)
			continue
		}
		sum := fingerprint(files)
		if sum == last {
			continue
		}
		set, err := data.Compile(ctx, files)
		if err != nil {
			p.logger.ErrorContext(ctx, "admission policies changed but not loaded; the running set stays", "err", err)
			if !errors.Is(err, context.DeadlineExceeded) {
				// The same files fail the same way: not again until
				// they change. A timeout may pass: try again.
				last = sum
			}
			continue
		}
		last = sum
		p.Swap(set)
		names := make([]string, 0, len(set.policies))
		for _, pol := range set.policies {
			names = append(names, pol.Name)
		}
		p.logger.InfoContext(ctx, "admission policies reloaded", "policies", names)
		if err := set.Unmerged(); err != nil {
			p.logger.WarnContext(ctx, "admission policies evaluated rule by rule: their merged rules did not compile", "err", err)
		}
	}
}
