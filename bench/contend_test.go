package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/distlock/distlock/redissingle"
)

// contender is one lock implementation as the contention benchmarks use
// it: acquire blocks until the key is held or ctx ends.
type contender interface {
	acquire(ctx context.Context, key string) (release func(context.Context) error, err error)
}

type oursContender struct{ l *redissingle.Locker }

func (c oursContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	ls, err := c.l.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	return ls.Release, nil
}

// bsmContender polls every 10 ms, bsm/redislock's usual linear retry.
type bsmContender struct{ c *redislock.Client }

func (c bsmContender) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	lk, err := c.c.Obtain(ctx, key, 30*time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)})
	if err != nil {
		return nil, err
	}
	return lk.Release, nil
}

// maxLockers is how many Lockers (clients, and pub/sub connections for
// ours) the contenders of one run are spread over, as separate processes
// would be.
const maxLockers = 8

// contenders returns n contenders of impl ("ours" or "bsm") spread over
// up to maxLockers clients, all counted by count.
func contenders(b *testing.B, s *server, impl string, n int, count *counter) []contender {
	b.Helper()
	cs := make([]contender, min(n, maxLockers))
	for i := range cs {
		switch impl {
		case "ours":
			cs[i] = oursContender{newLocker(b, s, count, nil)}
		case "bsm":
			cs[i] = bsmContender{redislock.New(newClient(b, s, count))}
		default:
			b.Fatalf("unknown implementation %q", impl)
		}
	}
	out := make([]contender, n)
	for i := range out {
		out[i] = cs[i%len(cs)]
	}
	return out
}

// contention is the outcome of one contend run.
type contention struct {
	handoffs []time.Duration // release start -> next holder's acquire returns
	acquired int
	elapsed  time.Duration
}

// contend runs len(cs) goroutines that each loop: acquire key, hold it
// for hold, release it, then wait until another goroutine has acquired it
// (a forced hand-off: a poller would otherwise re-take its own release at
// once), until warmup+n acquisitions. Every acquisition after the first is
// a hand-off, with the others parked in acquire. at, if not nil, is called
// by the holder while holding after acquisition warmup and after
// acquisition warmup+n, to take measurements over the n in between.
func contend(b *testing.B, cs []contender, key string, hold time.Duration, warmup, n int, at func(int)) contention {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := time.Now()
	var (
		lastRelease atomic.Int64 // since base, ns; 0: none yet
		mu          sync.Mutex
		cond        = sync.NewCond(&mu)
		taken       int
		res         contention
		wg          sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		cond.Broadcast()
		mu.Unlock()
	})
	defer stop()
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				release, err := c.acquire(ctx, key)
				if err != nil {
					if ctx.Err() == nil {
						b.Errorf("acquire: %v", err)
						cancel()
					}
					return
				}
				got := time.Since(base)
				mu.Lock()
				taken++
				mine := taken
				if lr := lastRelease.Load(); lr != 0 && mine > warmup {
					res.handoffs = append(res.handoffs, got-time.Duration(lr))
				}
				cond.Broadcast()
				mu.Unlock()
				if at != nil && (mine == warmup || mine == warmup+n) {
					at(mine)
				}
				if hold > 0 {
					time.Sleep(hold)
				}
				lastRelease.Store(int64(time.Since(base)))
				if err := release(context.Background()); err != nil {
					b.Errorf("release: %v", err)
				}
				if mine >= warmup+n {
					cancel()
					return
				}
				mu.Lock()
				for len(cs) > 1 && taken == mine && ctx.Err() == nil {
					cond.Wait()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.acquired = n
	res.elapsed = time.Since(base)
	return res
}

// warm makes one uncontended acquisition per distinct contender, so that
// connections, scripts and subscriptions exist before measuring.
func warm(b *testing.B, cs []contender) {
	b.Helper()
	seen := map[contender]bool{}
	for i, c := range cs {
		if seen[c] {
			continue
		}
		seen[c] = true
		release, err := c.acquire(context.Background(), fmt.Sprintf("warm:%d:%d", time.Now().UnixNano(), i))
		if err != nil {
			b.Fatal(err)
		}
		if err := release(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
