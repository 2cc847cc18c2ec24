package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/memlock"
)

// keyFlawLocker wraps a correct memlock handle and mishandles some keys
// the way a backend could.
type keyFlawLocker struct {
	*memlock.Locker
	space  *memlock.Locker
	flaw   string
	offset *atomic.Uint64 // added to every fence; "fence-reset" zeroes it
	stuck  chan struct{}  // "hang-long" blocks on it
}

func (l *keyFlawLocker) bad(ctx context.Context, key string) (string, error) {
	switch {
	case l.flaw == "segment" && strings.HasPrefix(key, "orders/"): // "orders/42" locks "orders"
		return "orders", nil
	case l.flaw == "unavailable-nul" && strings.Contains(key, "\x00"):
		return "", fmt.Errorf("%w: server rejected the key", distlock.ErrUnavailable)
	case l.flaw == "panic-utf8" && !utf8.ValidString(key):
		panic("invalid UTF-8 key")
	case l.flaw == "hang-long" && len(key) > 1<<16:
		<-l.stuck // ignores ctx
	case l.flaw == "slow-refusal" && strings.Contains(key, "\x00"):
		time.Sleep(1500 * time.Millisecond)
		return "", fmt.Errorf("%w: NUL in key", distlock.ErrInvalidArgument)
	case l.flaw == "fence-reset" && key == "distlock:fence":
		l.offset.Store(0)
	case l.flaw == "control-break" && key == "distlock:w:x":
		l.space.Revoke(ctx.Value(controlKey{}).(string))
	}
	return key, nil
}

type controlKey struct{}

func (l *keyFlawLocker) wrap(ls distlock.Lease, err error) (distlock.Lease, error) {
	if err != nil {
		return nil, err
	}
	return offsetFence{ls, l.offset.Load()}, nil
}

func (l *keyFlawLocker) Acquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	k, err := l.bad(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.wrap(l.Locker.Acquire(ctx, k, opts...))
}

func (l *keyFlawLocker) TryAcquire(ctx context.Context, key string, opts ...distlock.Option) (distlock.Lease, error) {
	k, err := l.bad(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.wrap(l.Locker.TryAcquire(ctx, k, opts...))
}

type offsetFence struct {
	distlock.Lease
	offset uint64
}

func (l offsetFence) Fence() uint64 { return l.Lease.Fence() + l.offset }

// TestHostileKeysBite: S34 is a BUG on lockers that let one key block
// another, report a bad key as unavailable, panic, hang, refuse slowly,
// reset the fence sequence or disturb a lease on another key; and kept
// on the correct in-process locker.
func TestHostileKeysBite(t *testing.T) {
	sc := scenarioByID(t, "S34")
	for _, c := range []struct{ flaw, wantIn string }{
		{"segment", "orders/42: x's TryAcquire found it held"},
		{"unavailable-nul", `\x00: x's TryAcquire returned`},
		{"panic-utf8", `\xff\xfe: x's TryAcquire panicked`},
		{"hang-long", "1 MiB: x's TryAcquire hung"},
		{"slow-refusal", "refused it only after"},
		{"fence-reset", "after x's TryAcquire of distlock:fence: a normal key got fence"},
		{"control-break", "after x's TryAcquire of distlock:w:x: the control lease on a normal key was lost"},
	} {
		t.Run(c.flaw, func(t *testing.T) {
			space := memlock.New(nil)
			offset := new(atomic.Uint64)
			offset.Store(1_000_000)
			stuck := make(chan struct{})
			t.Cleanup(func() { close(stuck) })
			h := Harness{Name: "keys-" + c.flaw, TTL: 300 * time.Millisecond,
				NewLocker: func(context.Context, string) (distlock.Locker, error) {
					return &keyFlawLocker{Locker: space.NewHandle(), space: space, flaw: c.flaw, offset: offset, stuck: stuck}, nil
				}}
			if c.flaw == "control-break" {
				sc := sc
				sc.run = func(e *env) observation {
					e.ctx = context.WithValue(e.ctx, controlKey{}, e.key+"-control")
					return s34(e)
				}
				res := runScenario(t, &h, space.Guarantees(), sc)
				checkBug(t, res, c.wantIn)
				return
			}
			checkBug(t, runScenario(t, &h, space.Guarantees(), sc), c.wantIn)
		})
	}
	space := memlock.New(nil)
	h := Harness{Name: "keys-correct", TTL: 300 * time.Millisecond,
		NewLocker: func(context.Context, string) (distlock.Locker, error) { return space.NewHandle(), nil }}
	if res := runScenario(t, &h, space.Guarantees(), sc); res.Verdict != Kept {
		t.Errorf("correct locker: %s (%s)", res.Verdict, res.Detail)
	}
}

func checkBug(t *testing.T, res Result, wantIn string) {
	t.Helper()
	if res.Verdict != Bug || !strings.Contains(res.Detail, wantIn) {
		t.Fatalf("verdict %q (%s), want BUG mentioning %q", res.Verdict, oneLine(res.Detail), wantIn)
	}
	t.Logf("caught: %s", cut(res.Detail, 300))
}
