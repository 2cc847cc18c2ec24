package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// wait waits until the entry my (created at rev) has no entry ahead of it.
// It watches pred, the entry just ahead, which a read at revision read
// found, and re-reads when pred goes, when the watch fails or every
// PollInterval. It returns the instant before the read that found the
// lock free, and a keepalive round sent for it. On failure the entry is
// deleted.
func (l *Locker) wait(ctx context.Context, s *session, key, my string, rev int64, pred *entry, read int64, o distlock.Options) (time.Time, *round, error) {
	giveUp := func(err error) (time.Time, *round, error) {
		l.giveUp(ctx, s, key, rev)
		return time.Time{}, nil, err
	}
	pfx := l.prefix(key)
	recheck := pred.rev == 0 // the enqueue did not read the entry just ahead
	for {
		var gone int64 // the revision that deleted pred, if the watch saw it
		if !recheck {
			var err error
			if gone, err = l.watch(ctx, s, pred, read); err != nil {
				return giveUp(err)
			}
		}
		recheck = false
		start := time.Now()
		var r *round
		if !s.fresh(start, staleAfter(o.TTL)) {
			r = s.renewAfter(start)
		}
		var st queueState
		_, err := l.do(ctx, o.TTL, time.Now().Add(o.TTL), 0, s.dead, func(ctx context.Context) error {
			var err error
			st, err = l.queueRead(ctx, pfx, my, rev, gone)
			return err
		})
		switch {
		case ctx.Err() != nil:
			return giveUp(ctxErr(ctx, err))
		case l.lc.Closing().Fired():
			return giveUp(distlock.ErrClosed)
		case s.isDead():
			return giveUp(errors.Join(ErrSessionExpired, s.err()))
		case err != nil:
			_ = retry.Wait(ctx, retry.Delay(o.RetryMin, o.RetryMax), nil)
			recheck = true
			continue
		}
		if !st.mine { // deleted, and perhaps created again by a late try of the enqueue
			l.giveUp(ctx, s, key, 0)
			return time.Time{}, nil, fmt.Errorf("%w: the waiting entry %s was deleted", ErrSessionExpired, my)
		}
		if st.ahead == nil {
			return start, r, nil
		}
		pred, read = st.ahead, st.revision
	}
}

// watch waits until the entry pred, which a read at revision read found,
// is deleted, the watch fails, or PollInterval passes. It returns the
// revision of the deletion, or 0 when it stopped for another reason (read
// the queue again all the same). It returns an error if ctx ends, the
// Locker closes or the session dies.
//
// The watch starts at the member's current revision, so the member serves
// it as soon as a deletion commits (a watch from a revision the member has
// already passed waits for etcd's 100 ms catch-up loop, which is why
// concurrency.Mutex hands off in about 100 ms). If the member had passed
// read when the watch started, pred may have gone in between: one point
// read at or after the watch's start (stillThere) checks that it has not,
// before the watch is trusted.
func (l *Locker) watch(ctx context.Context, s *session, pred *entry, read int64) (int64, error) {
	l.keepStream()
	if testHookBeforeWatch != nil {
		testHookBeforeWatch(pred.key)
	}
	wctx, cancel := context.WithCancel(l.waitContext())
	defer cancel()
	// The client's Watch blocks until the member confirms the watch, which
	// waits for the stream to reconnect if it is broken (a waiter cut off
	// from the cluster): the caller's end, the session's death and the
	// poll must end that wait too. Each cancels wctx, which closes wch.
	defer context.AfterFunc(ctx, cancel)()
	poll := time.AfterFunc(l.opts.PollInterval, cancel)
	defer poll.Stop()
	go func() {
		select {
		case <-s.dead:
			cancel()
		case <-wctx.Done():
		}
	}()
	for wch := l.cli.Watch(wctx, pred.key, clientv3.WithCreatedNotify()); ; {
		wr, ok := <-wch
		switch {
		case ctx.Err() != nil:
			return 0, retry.Ended(ctx, nil)
		case l.lc.Closing().Fired():
			return 0, distlock.ErrClosed
		case s.isDead():
			return 0, errors.Join(ErrSessionExpired, s.err())
		case !ok || wr.Canceled || wr.Err() != nil:
			return 0, nil // the poll, or the watch failed: read the queue again
		case wr.Created:
			if wr.Header.Revision > read && !l.stillThere(ctx, s, pred, wr.Header.Revision) {
				return 0, nil
			}
			continue
		}
		for _, ev := range wr.Events {
			// A member behind read may still report the deletion of an
			// earlier entry under the same key (the session queued for
			// the lock before): pred itself existed at read.
			if ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > read {
				return ev.Kv.ModRevision, nil
			}
		}
	}
}

// testHookBeforeWatch, set by tests only (nil in production), runs before
// a waiter starts watching its predecessor pred.
var testHookBeforeWatch func(pred string)

// stillThere reports whether pred still exists, with its create revision,
// at revision from or later: then it was not deleted up to from (a deleted
// entry never comes back with the same create revision). The member
// answers first (serializable) if it has reached from, else the leader.
// An error reports false.
func (l *Locker) stillThere(ctx context.Context, s *session, pred *entry, from int64) bool {
	var resp *clientv3.GetResponse
	_, err := l.do(ctx, s.ttl, time.Time{}, 1, s.dead, func(ctx context.Context) error {
		var err error
		resp, err = l.cli.Get(ctx, pred.key, clientv3.WithSerializable())
		if err == nil && resp.Header.Revision < from {
			resp, err = l.cli.Get(ctx, pred.key)
		}
		return err
	})
	if err != nil || resp.Header.Revision < from {
		return false
	}
	kvs := resp.Kvs
	return len(kvs) == 1 && kvs[0].CreateRevision == pred.rev
}
