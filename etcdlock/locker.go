package etcdlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
	"github.com/distlock/distlock/internal/retry"
)

// Locker hands out leases on etcd. It is safe for concurrent use.
type Locker struct {
	cli       *clientv3.Client
	ownClient bool        // close cli at Close (made by Dial)
	user      string      // the user Dial authenticates as, for errors
	dialed    bool        // made by Dial: tls is the client's (for diagnose)
	tls       *tls.Config // the client's TLS configuration, if dialed
	connected atomic.Bool // a request succeeded (see refused)
	opts      Options

	// lc is the open/closed state: calls in flight, the goroutines
	// (session renewals, clean-ups, the stream keeper), the closing signal
	// background work derives its contexts from, and the watchdogs.
	lc lifecycle.Lifecycle

	mu       sync.Mutex
	keeping  bool                         // the stream keeper runs (stream.go)
	sessions map[time.Duration][]*session // by TTL
	held     map[distlock.Lease]*driver
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker over an etcd client, which the Locker uses but does
// not own: Close leaves it open. opts may be nil for the defaults. Invalid
// options return an error matching distlock.ErrInvalidArgument, and so do
// Options.TLS, Username, Password and DialTimeout, which are Dial's: cli's
// own clientv3.Config holds its TLS and credentials. New does no I/O.
func New(cli *clientv3.Client, opts *Options) (*Locker, error) {
	if cli == nil {
		return nil, fmt.Errorf("%w: etcdlock: nil client", distlock.ErrInvalidArgument)
	}
	if opts != nil && (opts.TLS != nil || opts.Username != "" || opts.Password != "" || opts.DialTimeout != 0) {
		return nil, fmt.Errorf("%w: etcdlock: New: TLS, Username, Password and DialTimeout are Dial's options; configure them in the client's clientv3.Config", distlock.ErrInvalidArgument)
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	l := &Locker{cli: cli, opts: o, user: cli.Username, sessions: map[time.Duration][]*session{}, held: map[distlock.Lease]*driver{}}
	l.lc.Init()
	return l, nil
}

// Client is the etcd client the Locker uses.
func (l *Locker) Client() *clientv3.Client { return l.cli }

// Guarantees reports what etcd promises: a lease survives a holder's pause
// only while it is renewed, so a paused holder can outlive it
// (ClockIndependentSafety false: use the fence or TxnIfHeld); fences are
// create revisions (FenceDurable, cluster-wide); a minority of the
// endpoints' members may fail ((endpoints-1)/2, which assumes the
// endpoints are the cluster's members); Raft makes failover and restarts
// safe; waiters queue by create revision and are woken by a watch, but
// the order in which they are granted the lock is not promised (FIFO
// false); Done fires at the conservative local deadline; a crashed
// holder's key goes when its lease expires (a TTL, not at once); waiters
// queue under leases that expire when they are cut off (WaiterSessions).
func (l *Locker) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{
		Backend:           "etcd",
		Fence:             distlock.FenceDurable,
		FenceScope:        "cluster: the create revision of the holder's key",
		ToleratedFailures: (len(l.cli.Endpoints()) - 1) / 2,
		FailoverSafe:      true,
		SurvivesRestart:   true,
		FIFO:              false, // queued by create revision; the order of hand-offs is not promised
		PushWakeup:        true,
		LostNotification:  true,
		WaiterSessions:    true,
		CrossProcess:      true,
	}
}

// Close wakes this Locker's blocked Acquire calls (they delete their
// entries and return ErrClosed), stops renewing its leases and revokes the
// ones no lock holds, and waits for every goroutine it started. Leases
// still held are not released: their keys expire with their etcd lease
// after the TTL, and since nothing renews it any more, they are reported
// lost at once (Done, with a cause matching distlock.ErrClosed). A client
// opened from a URL is closed. Later calls return ErrClosed. Close is
// idempotent and returns nil.
func (l *Locker) Close() error {
	l.lc.Close(lifecycle.Hooks{Release: func() {
		if l.ownClient {
			_ = l.cli.Close()
		}
	}})
	return nil
}

// do runs one request, retrying tries that fail (each bounded by the try
// timeout; the client picks the next member) until one succeeds, ctx ends,
// until passes (if not zero), tries tries were made (if not zero) or stop
// closes, or a try fails in a way no retry fixes (see refusal: the error
// is then refused's). The request must be idempotent. It reports whether some try
// failed after it may have reached a server (its effect may still happen).
func (l *Locker) do(ctx context.Context, ttl time.Duration, until time.Time, tries int, stop <-chan struct{}, req func(ctx context.Context) error) (maybe bool, err error) {
	tt := l.opts.tryTimeout(ttl)
	for try := 1; ; try++ {
		dl := time.Now().Add(tt)
		if !until.IsZero() && until.Before(dl) {
			dl = until
		}
		tctx, cancel := context.WithDeadline(ctx, dl)
		err = req(tctx)
		cancel()
		if err == nil {
			l.succeeded()
			return maybe, nil
		}
		maybe = true
		// A diagnosis (see refused) takes at most a try's time, and ends
		// by until: the try may have used up its own.
		pdl := time.Now().Add(tt)
		if !until.IsZero() && until.Before(pdl) {
			pdl = until
		}
		pctx, cancel := context.WithDeadline(ctx, pdl)
		r := l.refused(pctx, err)
		cancel()
		if r != nil {
			return maybe, r // no retry fixes it
		}
		if ctx.Err() != nil || (!until.IsZero() && !time.Now().Before(until)) || try == tries {
			return maybe, err
		}
		select {
		case <-stop:
			return maybe, err
		case <-l.lc.Closing().Done():
			return maybe, errors.Join(distlock.ErrClosed, err)
		default:
		}
		_ = retry.Wait(ctx, time.Millisecond+rand.N(4*time.Millisecond), nil)
	}
}
