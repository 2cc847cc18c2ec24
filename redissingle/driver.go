package redissingle

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/validity"
)

// driver is the lease.Driver of one held key.
type driver struct {
	l     *Locker
	k     keySet
	token string
}

// Extend implements lease.Driver with a compare-and-PEXPIRE that never
// re-creates the key.
func (d *driver) Extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	start := time.Now()
	ok, err := d.l.extend(ctx, d.l.client, d.k, d.token, ttl)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		return time.Time{}, fmt.Errorf("%w: redissingle: key %q is no longer ours", distlock.ErrLeaseLost, d.k.lock)
	}
	return validity.Until(start, ttl, validity.DefaultDrift(ttl)), nil
}

// Release implements lease.Driver: compare-and-delete, or a hand-off to
// the first waiter.
func (d *driver) Release(ctx context.Context) error {
	r, err := d.l.runInt(ctx, d.l.client, d.l.scripts.release, d.k.all(), d.token)
	if err != nil {
		return d.l.wrap("release", err)
	}
	if r == 0 {
		return fmt.Errorf("%w: redissingle: key %q is no longer ours", distlock.ErrLeaseLost, d.k.lock)
	}
	return nil
}

// extend runs extendScript on c and reports whether the key was ours.
func (l *Locker) extend(ctx context.Context, c scripter, k keySet, token string, ttl time.Duration) (bool, error) {
	r, err := l.runInt(ctx, c, extendScript, []string{k.lock}, token, ms(ttl))
	if err != nil {
		return false, l.wrap("extend", err)
	}
	return r == 1, nil
}
