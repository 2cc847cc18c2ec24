package multilock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// Lease holds a set of keys as one lease: one part (a distlock.Lease) per
// key, in canonical order. It implements distlock.Lease and is safe for
// concurrent use. It is held while every part is; the first part lost
// ends it, and the others are then released at once.
type Lease struct {
	keys  []string         // canonical order
	parts []distlock.Lease // parts[i] holds keys[i]

	stop    chan struct{} // closed by Release: the watcher exits
	watched chan struct{} // closed when the watcher has exited
	done    chan struct{}

	mu        sync.Mutex
	ended     bool  // done is closed; guarded by mu
	releasing bool  // Release has begun: nothing is lost from now on; guarded by mu
	err       error // set when ended; guarded by mu
	relOnce   sync.Once
	relErr    error
}

var _ distlock.Lease = (*Lease)(nil)

// newLease starts the watcher of a lease over parts.
func newLease(keys []string, parts []distlock.Lease) *Lease {
	l := &Lease{keys: keys, parts: parts,
		stop: make(chan struct{}), watched: make(chan struct{}), done: make(chan struct{})}
	go l.watch()
	return l
}

// watch waits for the first part to end, for Release, or for the lease
// to end by a loss that Extend saw; on a part's end it ends the lease.
func (l *Lease) watch() {
	defer close(l.watched)
	cases := make([]reflect.SelectCase, 0, len(l.parts)+2)
	for _, p := range l.parts {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p.Done())})
	}
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.stop)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(l.done)})
	if i, _, _ := reflect.Select(cases); i < len(l.parts) {
		l.lose(i, l.parts[i].Err())
	}
}

// lose ends the lease as lost on part i (once, and not once Release has
// begun): Done closes first, so the holder hears of it at once, then the
// other parts are released in reverse order.
func (l *Lease) lose(i int, cause error) {
	l.mu.Lock()
	if l.ended || l.releasing {
		l.mu.Unlock()
		return
	}
	if !errors.Is(cause, distlock.ErrLeaseLost) { // a part released directly, say
		cause = fmt.Errorf("%w: %w", distlock.ErrLeaseLost, cause)
	}
	l.ended, l.err = true, fmt.Errorf("multilock: key %q lost: %w", l.keys[i], cause)
	close(l.done)
	l.mu.Unlock()
	for j := len(l.parts) - 1; j >= 0; j-- {
		if j != i {
			_ = release(context.Background(), l.parts[j])
		}
	}
}

// Key returns the keys in canonical order joined with ",": a display
// form, ambiguous when a key contains a comma. Keys returns the list.
func (l *Lease) Key() string { return strings.Join(l.keys, ",") }

// Keys returns a copy of the keys in canonical order (sorted bytewise).
func (l *Lease) Keys() []string { return append([]string(nil), l.keys...) }

// Token returns the parts' tokens in canonical order joined with ",".
func (l *Lease) Token() string {
	tokens := make([]string, len(l.parts))
	for i, p := range l.parts {
		tokens[i] = p.Token()
	}
	return strings.Join(tokens, ",")
}

// Fence returns the fence of the first key in canonical order. A resource
// guarded by several keys should check each key's fence (Fences).
func (l *Lease) Fence() uint64 { return l.parts[0].Fence() }

// Fences returns each key's fence, by key.
func (l *Lease) Fences() map[string]uint64 {
	m := make(map[string]uint64, len(l.parts))
	for i, p := range l.parts {
		m[l.keys[i]] = p.Fence()
	}
	return m
}

// Parts returns a copy of the per-key leases, in canonical order, for
// reading (Key, Fence, ValidUntil, Done, Err). Releasing or extending a
// part directly bypasses the Lease: a part released this way ends the
// Lease as lost.
func (l *Lease) Parts() []distlock.Lease { return append([]distlock.Lease(nil), l.parts...) }

// ValidUntil is the earliest of the parts' validities: after it passes,
// another client may hold one of the keys.
func (l *Lease) ValidUntil() time.Time {
	u := l.parts[0].ValidUntil()
	for _, p := range l.parts[1:] {
		if v := p.ValidUntil(); v.Before(u) {
			u = v
		}
	}
	return u
}

// Extend extends every part for ttl from now, in canonical order. A part
// lost on the way ends the lease (the other parts are released) and the
// error matches distlock.ErrLeaseLost; any other failure (say
// distlock.ErrUnavailable) stops there and leaves every part held with
// the validity it has, the earlier parts extended. On a lease that has
// ended it returns Err. ttl <= 0 returns distlock.ErrInvalidArgument.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("%w: TTL must be > 0, got %v", distlock.ErrInvalidArgument, ttl)
	}
	if err := l.Err(); err != nil {
		return err
	}
	for i, p := range l.parts {
		err := p.Extend(ctx, ttl)
		if errors.Is(err, distlock.ErrLeaseLost) {
			l.lose(i, err)
			if lerr := l.Err(); lerr != nil {
				return lerr
			}
		}
		if err != nil {
			return fmt.Errorf("multilock: extending key %q: %w", l.keys[i], err)
		}
	}
	return nil
}

// Release stops the watcher and releases every part in reverse canonical
// order, and returns their errors joined on one line: one matching
// distlock.ErrLeaseLost if a part had been lost. After Release, Done is
// closed and Err matches distlock.ErrReleased, unless the lease was lost
// first. A second call returns the first call's result.
func (l *Lease) Release(ctx context.Context) error {
	l.relOnce.Do(func() {
		l.mu.Lock()
		l.releasing = true
		l.mu.Unlock()
		close(l.stop)
		<-l.watched
		errs := make([]error, 0, len(l.parts))
		for i := len(l.parts) - 1; i >= 0; i-- {
			if err := l.parts[i].Release(ctx); err != nil {
				errs = append(errs, fmt.Errorf("multilock: releasing key %q: %w", l.keys[i], err))
			}
		}
		l.relErr = joinLine(errs)
		l.mu.Lock()
		if !l.ended {
			l.ended, l.err = true, distlock.ErrReleased
			if errors.Is(l.relErr, distlock.ErrLeaseLost) { // lost as Release began
				l.err = l.relErr
			}
			close(l.done)
		}
		l.mu.Unlock()
	})
	return l.relErr
}

// Done is closed when the lease is released or any part is known lost.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while every part is held. After Done is closed it matches
// distlock.ErrReleased if the lease was released while held, or
// distlock.ErrLeaseLost (naming the key, joined with the part's cause) if
// a part was lost first; a later Release does not change it.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
