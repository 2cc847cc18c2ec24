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

// errExpired: after Close stopped watching, the lease's validity passed.
var errExpired = errors.New("migrate: validity passed after the Locker was closed")

// both is a PhaseBoth lease: the old backend's lease (first) and the new
// one's (second). It is held while both are; a goroutine of the Locker
// watches both and ends it at the first loss, releasing the other. Once
// Close has begun, a timer at the lease's validity takes over.
type both struct {
	l             *Locker
	first, second distlock.Lease

	stop    chan struct{} // closed by Release: the watcher exits
	watched chan struct{} // closed when the watcher has exited
	done    chan struct{}

	mu        sync.Mutex
	ended     bool
	releasing bool        // Release has begun: nothing is lost from now on
	err       error       // set when ended
	expiry    *time.Timer // after Close
	relOnce   sync.Once
	relErr    error
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
		b.check()
	}
}

// check ends the lease if a side has ended or its validity has passed,
// and otherwise arms a timer to look again at the validity's end. It
// runs once Close has begun, when no goroutine watches the sides.
func (b *both) check() {
	select {
	case <-b.first.Done():
		b.lose("old", b.first.Err(), b.second)
		return
	case <-b.second.Done():
		b.lose("new", b.second.Err(), b.first)
		return
	default:
	}
	left := time.Until(b.ValidUntil())
	if left <= 0 {
		b.lose("either", errExpired, nil)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended && !b.releasing {
		b.expiry = time.AfterFunc(left, b.check)
	}
}

// lose ends the lease as lost (once, and not once Release has begun):
// Done closes first, so the holder hears of it at once, then the other
// side (if any) is released.
func (b *both) lose(side string, cause error, other distlock.Lease) {
	b.mu.Lock()
	if b.ended || b.releasing {
		b.mu.Unlock()
		return
	}
	b.ended, b.err = true, lostOn(side, cause)
	close(b.done)
	b.mu.Unlock()
	if other != nil {
		b.l.cleanup(other)
	}
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
// sides as they are (held, with the validity each has). On a lease that
// has ended it returns Err.
func (b *both) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: TTL must be > 0, got %v", distlock.ErrInvalidArgument, ttl)
	}
	if err := b.Err(); err != nil {
		return err
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
		b.mu.Lock()
		b.releasing = true
		if b.expiry != nil {
			b.expiry.Stop()
		}
		b.mu.Unlock()
		close(b.stop)
		<-b.watched
		b.relErr = errors.Join(b.second.Release(ctx), b.first.Release(ctx))
		b.mu.Lock()
		if !b.ended {
			b.ended, b.err = true, distlock.ErrReleased
			if errors.Is(b.relErr, distlock.ErrLeaseLost) { // lost, unseen (after Close)
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
