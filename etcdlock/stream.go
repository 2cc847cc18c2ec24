package etcdlock

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/retry"
)

// The etcd client multiplexes the watches that carry the same metadata
// over one gRPC stream per client, and closes that stream when its last
// watch ends. A waiter watches its predecessor for one wait only, so
// without anything else open every wait would set up and tear down a
// stream on both sides (a new HTTP/2 stream, and the member's per-stream
// goroutines and watch stream). The Locker therefore keeps one idle watch
// open on the stream its waits use, from its first wait until Close: the
// waits' watches then come and go on a stream that stays (benchmark B3 in
// docs/conformance.md measures the hand-off rate under contention).

// keeperRev is the revision the keeper's watch starts at: one no cluster
// reaches. Such a watch is served with the synced ones and never reports
// anything. A watch from the current revision would do as well until the
// stream breaks: the client then resumes it from the revision it was
// created at, which it never moves past without events, and the member
// would replay the whole history since then to an unsynced watcher.
const keeperRev = int64(1) << 62

// keeperRetryMin and keeperRetryMax bound how long the keeper waits
// before watching again after its watch ended (the member lost its
// leader, the stream broke, or the user may not read the key): the delay
// doubles while watches end within keeperRetryMax of their start.
const (
	keeperRetryMin = 500 * time.Millisecond
	keeperRetryMax = 30 * time.Second
)

// waitContext is the context of a wait's watch, from which the client
// derives the stream it uses (the metadata must match the keeper's).
func (l *Locker) waitContext() context.Context {
	return clientv3.WithRequireLeader(l.lc.Closing().Context())
}

// keepStream starts the stream keeper once; it runs until Close. It does
// nothing if the Locker is closing.
func (l *Locker) keepStream() {
	l.mu.Lock()
	if l.keeping {
		l.mu.Unlock()
		return
	}
	l.keeping = true
	l.mu.Unlock()
	l.lc.Go(func() {
		b := retry.Backoff{Min: keeperRetryMin, Max: keeperRetryMax}
		for {
			start := time.Now()
			ctx, cancel := context.WithCancel(l.waitContext())
			for range l.cli.Watch(ctx, l.streamKeeperKey(), clientv3.WithRev(keeperRev)) {
				// nothing reaches keeperRev; drain whatever the stream says
			}
			cancel()
			if time.Since(start) > keeperRetryMax {
				b.Reset()
			}
			if !b.Wait(l.lc.Closing().Done()) {
				return
			}
		}
	})
}
