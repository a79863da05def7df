// Package bench measures a running trustplane cluster from the outside, as
// an ordinary API client, and compares it with a baseline measured in the
// same run: raw etcd puts of values the size of one stored Secret.
//
// Run goes through these phases, in order, each at Config.Concurrency:
//
//	create    Config.Requests Secrets of Config.ObjectBytes each
//	get       Config.Requests gets of randomly chosen Secrets among them
//	list      Config.Requests lists of every Secret in the namespace
//	list-large  Config.ListObjects ConfigMaps of Config.ObjectBytes (each
//	          its own random bytes), then Config.ListRequests lists of
//	          them, one at a time, in each variant: protobuf or JSON,
//	          resourceVersion "" or "0", gzip accepted or not; one
//	          Result per variant, with the bytes of a list decoded and
//	          as read from the connection
//	watch     Config.Watchers watches of ConfigMaps, opened at one
//	          resourceVersion, then Config.WatchEvents ConfigMap creates;
//	          the phase counts the events every watcher received and the
//	          latency of each delivery
//	etcd-put  only with Config.Etcd: Config.Requests raw puts under
//	          /registry/trustplane-bench/, their values as large as one
//	          Secret stored by the create phase
//
// With Config.Hold, a run measures memory instead, in one phase:
//
//	hold      Config.Hold ConfigMaps of Config.ObjectBytes each, created
//	          at Config.Concurrency; then Config.Watchers watches of them,
//	          with the watch-list protocol if Config.WatchList; once every
//	          watch has caught up, the API server's resident memory read
//	          by Config.Memory (ProcessMemory reads it from /proc, so the
//	          server must run alone in its process, on this machine)
//
// Latencies are measured by the client around each operation, and
// percentiles are exact (nearest rank over all samples). A run works in a
// namespace of its own and removes it, and its raw etcd keys, at the end,
// also when it fails.
//
// A minimal use:
//
//	results, err := bench.Run(ctx, bench.Config{Client: clientset})
//	if err != nil {
//		return err
//	}
//	return bench.WriteTable(os.Stdout, results)
package bench
