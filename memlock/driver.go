package memlock

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/validity"
)

// driver is the lease.Driver of one held memlock key: it acts on the key
// only while the key still carries its token and has not expired.
type driver struct {
	s          *space
	key, token string
}

// Extend resets the key's expiry to ttl from now. A key that expired, was
// revoked or passed to another holder returns an error matching
// distlock.ErrLeaseLost; an ended ctx returns its error.
func (d driver) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	e := d.s.keys[d.key]
	if e == nil || e.token != d.token || !e.held(start) {
		return time.Time{}, fmt.Errorf("%w: key %q is no longer ours", distlock.ErrLeaseLost, d.key)
	}
	e.expires = start.Add(ttl)
	e.timer.Reset(ttl)
	return validity.Until(start, ttl, validity.DefaultDrift(ttl)), nil
}

// Release frees the key and wakes its first waiter. A key that expired,
// was revoked or passed to another holder is left alone and returns an
// error matching distlock.ErrLeaseLost.
func (d driver) Release(context.Context) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	e := d.s.keys[d.key]
	if e == nil || e.token != d.token || !e.held(time.Now()) {
		return fmt.Errorf("%w: key %q is no longer ours", distlock.ErrLeaseLost, d.key)
	}
	e.lease = nil // released, not lost: no notification
	d.s.freeLocked(d.key, e, nil)
	return nil
}
