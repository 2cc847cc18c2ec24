// Package etcdlock is the etcd backend: a lock is a queue of keys under
// the lock's prefix, each attached to an etcd lease, served in the order
// of their create revisions, with the key layout of etcd's
// concurrency.Mutex and `etcdctl lock`, so that this Locker, Mutex users
// and etcdctl exclude each other (a migration needs no flag day).
//
// Keys: any non-empty byte string of at most MaxKeyLen bytes ("/", NUL
// and invalid UTF-8 included). The lock of key k is the prefix
// Options.Prefix+k+"/"; a client's entry is that prefix followed by its
// etcd lease ID in hex, as Mutex writes it. The entry with the lowest
// create revision holds the lock.
// The entries of a lock are the keys directly under its prefix: the lock
// of "p/42" lies under "p/" too, one level down, and the lock of "p"
// skips its keys, so that "p" and "p/42" are independent locks (see
// keys.go). A queue read that meets such keys reads every key under the
// prefix created before the caller's entry (names only). Mutex and
// etcdctl wait for every key under the prefix: a Mutex on "p" also waits
// for the holders of "p/42", which delays it but never breaks exclusion.
//
// Leases: the Locker shares one etcd lease (a "session") between its locks
// and waiters of the same TTL, renewed by one goroutine every TTL/10, so a
// client holding many locks holds few leases; a second acquisition of a key
// the Locker already holds or waits for uses another lease (its entry must
// differ). Each lock still ends on its own: at its own TTL unless extended
// (its entry is then deleted), on Release, or when its session dies. The
// session's local deadline is the send time of the last keepalive the
// server answered, plus the TTL, minus the drift allowance (TTL x 0.01 + 2
// ms): the server keeps the lease at least that long, so a holder is told
// (Done) before anyone else can be granted the key. An unused lease is
// revoked after one TTL, and at Close.
//
// Acquire: one transaction creates the entry if absent and reads the entry
// just before it; the call holds the lock if there is none. Otherwise it
// watches only that predecessor (no herd), from the member's current
// revision, so the member serves the watch as soon as the deletion commits
// (concurrency.Mutex's watch starts at its read's revision, which the
// member has usually passed, and waits for etcd's 100 ms catch-up loop);
// if the member had passed the read when the watch started, one point
// read checks that the predecessor is still there. When the predecessor
// goes, one read checks that the caller's entry still exists and that no
// earlier entry is left; it is served by the member (serializable) when
// the member has applied the deletion, since an earlier entry can only go,
// never come, else through the leader. What keeps the lock exclusive until
// its validity is the session's deadline, which caps it. Waiters are
// served in arrival
// (create revision) order. A waiter whose session dies returns
// ErrSessionExpired at once; a cancelled or failed Acquire deletes its
// entry (in the background if the cluster cannot be reached).
//
// Fence: the create revision of the holder's entry, cluster-wide, strictly
// increasing across holders and durable across restarts and leader
// changes. Guard and GuardedTxn make a write in etcd conditional on the
// lock still being held (a fence checked by the coordinator itself).
//
// URL: etcd://[user:password@]host1:2379,host2:2379,...[/prefix][?params],
// see Open's documentation in url.go.
package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/lifecycle"
	"github.com/distlock/distlock/internal/retry"
)

// Locker hands out leases on etcd. It is safe for concurrent use.
type Locker struct {
	cli       *clientv3.Client
	ownClient bool // close cli at Close (opened from a URL)
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
// options return an error matching distlock.ErrInvalidArgument. New does
// no I/O.
func New(cli *clientv3.Client, opts *Options) (*Locker, error) {
	if cli == nil {
		return nil, fmt.Errorf("%w: etcdlock: nil client", distlock.ErrInvalidArgument)
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	l := &Locker{cli: cli, opts: o, sessions: map[time.Duration][]*session{}, held: map[distlock.Lease]*driver{}}
	l.lc.Init()
	return l, nil
}

// Client is the etcd client the Locker uses.
func (l *Locker) Client() *clientv3.Client { return l.cli }

// Guarantees reports what etcd promises: a lease survives a holder's pause
// only while it is renewed, so a paused holder can outlive it
// (ClockIndependentSafety false: use the fence or GuardedTxn); fences are
// create revisions (FenceDurable, cluster-wide); a minority of the
// endpoints' members may fail ((endpoints-1)/2, which assumes the
// endpoints are the cluster's members); Raft makes failover and restarts
// safe; waiters queue by create revision (FIFO not promised: S25 saw out-of-order hand-offs under load) and are woken by a watch; Done fires at the
// conservative local deadline; a crashed holder's key goes when its lease
// expires (a TTL, not at once); waiters queue under leases that expire
// when they are cut off (WaiterSessions).
func (l *Locker) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{
		Backend:           "etcd",
		Fence:             distlock.FenceDurable,
		FenceScope:        "cluster: the create revision of the holder's key",
		ToleratedFailures: (len(l.cli.Endpoints()) - 1) / 2,
		FailoverSafe:      true,
		SurvivesRestart:   true,
		FIFO:              false, // queued by create revision, but S25 saw hand-offs out of call order under load: not promised until explained
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
// closes. The request must be idempotent. It reports whether some try
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
			return maybe, nil
		}
		maybe = true
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

// grant makes the lease of an entry that holds the lock. Its validity is
// the acquisition's start plus the TTL minus drift, capped by the
// session's deadline (after the keepalive r, if one was sent for it). If
// the session is dead by then, or dies while the lease is made, grant
// hands out no lease and returns an error matching ErrSessionExpired (and
// distlock.ErrUnavailable) that wraps the session's cause; the entry went
// with the etcd lease, or, if the session died because the Locker closed
// (its etcd lease may live on), grant deletes it (see giveUp).
func (l *Locker) grant(ctx context.Context, s *session, key, my string, rev int64, token string, start time.Time, o distlock.Options, r *round) (distlock.Lease, error) {
	if testHookBeforeGrant != nil {
		testHookBeforeGrant()
	}
	if r != nil {
		_ = r.wait(ctx, s, l.opts.keepAliveTimeout(o.TTL)) // else the current deadline applies
	}
	if err := s.err(); err != nil {
		l.giveUp(ctx, s, key, rev)
		return nil, fmt.Errorf("%w: %w", ErrSessionExpired, err)
	}
	vu := start.Add(o.TTL - drift(o.TTL))
	if sd := s.deadlineNow(); sd.Before(vu) {
		vu = sd
	}
	d := &driver{l: l, s: s, key: key, my: my, rev: rev, ttl: o.TTL, deleting: make(chan struct{}, 1)}
	ls, err := lease.Grant(ctx, lease.Config{
		Key: key, Token: token, Fence: uint64(rev), Start: start, ValidUntil: vu,
		Options: o, Driver: d, Group: l.lc.Watchdogs(),
	})
	if err != nil {
		return nil, err
	}
	if testHookBeforeAttach != nil {
		testHookBeforeAttach()
	}
	d.attach(ls, vu)
	if err := s.err(); err != nil { // it died after the check above: attach reported the lease lost
		d.finish()
		d.forget()
		l.giveUp(ctx, s, key, rev) // deletes the entry if the Locker closed (its lease may live on)
		return nil, fmt.Errorf("%w: %w", ErrSessionExpired, err)
	}
	return ls, nil
}

// abandon gives up an entry of key on s whose create revision is rev (0:
// unknown, or a write that may still land): it deletes the entry in the
// background, retrying until it is gone, the session dies or the Locker
// closes, and then frees the key on s. If a write on the entry may still be
// in flight, the session is retired first (see retire).
func (l *Locker) abandon(s *session, key string, rev int64) {
	if rev == 0 {
		l.retire(s, key)
	}
	// Once Close has begun nothing is started: Close revokes unused
	// leases; the others expire.
	l.lc.Go(func() { l.deleteEntry(l.lc.Closing().Context(), s, key, rev) })
}

// deleteEntry deletes the entry of key on s, retrying, then frees the key
// on s. It reports what it found (see deletion): whether the entry it
// deleted was ours (created at rev, or any entry if rev is 0, not known),
// or, when it found the entry gone, whether an earlier try whose reply
// was lost may have deleted it.
//
// It sends a plain delete, as concurrency.Mutex's Unlock does (a
// compare-and-delete transaction costs etcd 14-17% more), and learns from
// the previous value whether the entry was ours. A plain delete is safe
// because no other entry of key can exist on s while this call runs: the
// key stays reserved on s (no other acquisition of key uses s) until this
// call frees it, after a delete known to have been applied, or once s is
// dead (a dead session is never used again, and its entries go with its
// lease). One hazard
// remains: a try that timed out may still be applied later, after the key
// is freed and a newer acquisition on s created its entry again. So when
// any try's outcome is unknown, s is retired for key first (never used
// again for it), and that late delete can only find nothing.
func (l *Locker) deleteEntry(ctx context.Context, s *session, key string, rev int64) (deletion, error) {
	my := l.etcdKey(key, s)
	var resp *clientv3.DeleteResponse
	maybe, err := l.do(ctx, s.ttl, time.Time{}, 0, s.dead, func(ctx context.Context) error {
		var err error
		resp, err = l.cli.Delete(ctx, my, clientv3.WithPrevKV())
		if err == nil && testHookDeleted != nil {
			err = testHookDeleted()
		}
		return err
	})
	if maybe {
		l.retire(s, key) // a timed-out delete may land after a newer entry of key on s
	}
	if err != nil && !s.isDead() {
		return deletedGone, err // the key stays reserved: the entry may exist
	}
	l.detach(s, key)
	switch {
	case err != nil:
		return deletedGone, nil // the session died: its keys go with its lease
	case len(resp.PrevKvs) > 0 && (rev == 0 || resp.PrevKvs[0].CreateRevision == rev):
		return deletedOurs, nil
	case len(resp.PrevKvs) == 0 && maybe:
		return deletedMaybe, nil // perhaps by a try whose reply was lost
	default:
		return deletedGone, nil // gone already (expired with the lease, or deleted)
	}
}

// deletion is what deleteEntry found.
type deletion int

const (
	// deletedGone: the entry was gone (or not ours, or the session died).
	deletedGone deletion = iota
	// deletedOurs: it deleted the entry created at rev.
	deletedOurs
	// deletedMaybe: the entry was gone, and an earlier try whose reply was
	// lost (a timeout, a dropped connection) may have deleted it.
	deletedMaybe
)

// testHookDeleted, set by tests only (nil in production), runs after each
// delete the server answered; an error it returns replaces the answer, as
// if the reply had been lost.
var testHookDeleted func() error

// testHookBeforeGrant, set by tests only (nil in production), runs at the
// start of grant.
var testHookBeforeGrant func()

// testHookBeforeAttach, set by tests only (nil in production), runs in
// grant after the lease is made, before it is attached to its session.
var testHookBeforeAttach func()
