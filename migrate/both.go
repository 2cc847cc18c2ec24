package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
)

// both is a PhaseBoth lease: the old backend's lease (first) and the new
// one's (second). It is held while both are; a goroutine of the Locker
// watches both and ends it at the first loss, releasing the other.
type both struct {
	l             *Locker
	first, second distlock.Lease

	stop    chan struct{} // closed by Release: the watcher exits
	watched chan struct{} // closed when the watcher has exited
	done    chan struct{}

	mu      sync.Mutex
	ended   bool
	err     error // set when ended
	relOnce sync.Once
	relErr  error
}

// newBoth starts the watcher of a new lease; false once Close has begun.
func (l *Locker) newBoth(first, second distlock.Lease) (*both, bool) {
	b := &both{l: l, first: first, second: second,
		stop: make(chan struct{}), watched: make(chan struct{}), done: make(chan struct{})}
	if !l.lc.Go(b.watch) {
		return nil, false
	}
	return b, true
}

// watch ends the lease when either side is lost, until Release or Close.
func (b *both) watch() {
	defer close(b.watched)
	select {
	case <-b.first.Done():
		b.lose("old", b.first.Err(), b.second)
	case <-b.second.Done():
		b.lose("new", b.second.Err(), b.first)
	case <-b.stop:
	case <-b.l.lc.Closing().Done():
	}
}

// lose ends the lease as lost (once): Done closes first, so the holder
// hears of it at once, then the other side is released.
func (b *both) lose(side string, cause error, other distlock.Lease) {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return
	}
	b.ended, b.err = true, lostOn(side, cause)
	close(b.done)
	b.mu.Unlock()
	b.l.cleanup(other)
}

func (b *both) Key() string { return b.first.Key() }

// Token joins the two backends' tokens: "<old>+<new>".
func (b *both) Token() string { return b.first.Token() + "+" + b.second.Token() }

// Fence is the old backend's fence; Fences has both.
func (b *both) Fence() uint64 { return b.first.Fence() }

func (b *both) fences() fencing.Pair {
	return fencing.Pair{From: b.first.Fence(), To: b.second.Fence()}
}

// ValidUntil is the earlier of the two leases' validities.
func (b *both) ValidUntil() time.Time {
	u, v := b.first.ValidUntil(), b.second.ValidUntil()
	if v.Before(u) {
		return v
	}
	return u
}

// Extend extends the old backend's lease, then the new one's. A side
// lost on the way ends the lease (the other side is released) and the
// error matches distlock.ErrLeaseLost; any other failure leaves both
// sides as they are (held, with the validity each has).
func (b *both) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: TTL must be > 0, got %v", distlock.ErrInvalidArgument, ttl)
	}
	if err := b.first.Extend(ctx, ttl); err != nil {
		if errors.Is(err, distlock.ErrLeaseLost) {
			b.lose("old", err, b.second)
		}
		return err
	}
	err := b.second.Extend(ctx, ttl)
	if errors.Is(err, distlock.ErrLeaseLost) {
		b.lose("new", err, b.first)
	}
	return err
}

// Release releases the new backend's lease, then the old one's (the
// reverse of the acquisition), and returns both errors joined: one
// matching distlock.ErrLeaseLost if either had been lost. A second call
// returns the first call's result.
func (b *both) Release(ctx context.Context) error {
	b.relOnce.Do(func() {
		close(b.stop)
		<-b.watched
		b.relErr = errors.Join(b.second.Release(ctx), b.first.Release(ctx))
		b.mu.Lock()
		if !b.ended {
			b.ended, b.err = true, distlock.ErrReleased
			if errors.Is(b.relErr, distlock.ErrLeaseLost) { // lost while nobody watched (after Close)
				b.err = b.relErr
			}
			close(b.done)
		}
		b.mu.Unlock()
	})
	return b.relErr
}

func (b *both) Done() <-chan struct{} { return b.done }

func (b *both) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
