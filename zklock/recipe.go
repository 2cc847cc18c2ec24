package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
)

// The lock recipe, as Curator's InterProcessMutex runs it:
//
//  1. create P/escape(key)/_c_<guid>-lock- (ephemeral, sequential; the
//     parents as container nodes if missing). The GUID is the lease's
//     token: if the reply is lost, the node is found again by it and
//     deleted (scenario S27 of docs/conformance.md).
//  2. read the own node with a watch (pipelined with step 3): its czxid is
//     the fence, the watch reports a deletion (a revocation, scenario S33 of
//     docs/conformance.md).
//  3. list the children; if ours has the lowest sequence number, the key
//     is ours. Otherwise TryAcquire deletes its node and fails; Acquire
//     watches only the node just before its own (no herd, FIFO) and goes
//     back to 3 when it is deleted.
//
// The listing that grants the key follows a request that went through the
// leader: the create (first listing) or a sync (every later one). A
// follower cut off from the leader answers reads from its own copy until
// it gives up on the leader (syncLimit ticks), while the leader may expire
// the session and grant the key elsewhere; the lease's validity counts
// from the start of that request, when the leader still had the session.
//
// Every way out without a lease deletes the own node: at once if the
// caller's context allows, else through the janitor.

// acquireOnce makes one acquisition on s; wait false is TryAcquire.
func (l *Locker) acquireOnce(ctx context.Context, s *session, key string, o distlock.Options, wait bool) (distlock.Lease, error) {
	bound := l.opts.ConnectTimeout
	if wait {
		bound = 0
	}
	v, err := s.ready(ctx, bound)
	if err != nil {
		return nil, err
	}
	if l.sessionValidity(v.timeout) <= 0 {
		return nil, fmt.Errorf("%w: zklock: a negotiated session timeout of %v leaves no validity with tick time %v and safe fraction %v: raise the TTL or Options.SessionTimeout, or set Options.TickTime to the ensemble's tickTime",
			distlock.ErrInvalidArgument, v.timeout, l.opts.TickTime, l.opts.SafeFraction)
	}
	parent := l.Path(key)
	token := lease.NewToken()
	own, created, err := l.create(ctx, s, v, key, parent, token, nodeData(o.Label))
	if err != nil {
		return nil, err
	}
	s.expect(own) // before the watched read of own (see session.queued)
	ls, err := l.queue(ctx, s, v, key, parent, own, token, created, o, wait)
	if err != nil {
		s.unexpect(own)
		l.remove(ctx, s, v, own)
	}
	return ls, err
}

// create makes our lock node, holding data (the lease's label, which
// nothing in the recipe reads), creating missing parents as containers.
// It returns the node's path and the start of the create that made it.
func (l *Locker) create(ctx context.Context, s *session, v view, key, parent, token string, data []byte) (string, time.Time, error) {
	want := parent + "/" + nodeName(token)
	if testHookBeforeCreate != nil {
		testHookBeforeCreate()
	}
	for try := 0; ; try++ {
		start := time.Now()
		p, err := call(l, ctx, func() (string, error) {
			return s.conn.Create(want, data, zk.FlagEphemeralSequential, l.opts.ACL)
		}, func(p string, err error) { l.forget(s, parent, token, p, err) })
		switch {
		case err == nil:
			return p, start, nil
		case errors.Is(err, zk.ErrNoNode) && try < 5:
			if err := l.makeParents(ctx, s, parent); err != nil {
				return "", time.Time{}, err
			}
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			// Abandoned in flight. The janitor looks for the GUID now: its
			// listing runs on the same session after the create, so it
			// sees the node if the create took effect (forget also runs
			// when the request returns, which can take until go-zookeeper
			// gives the connection up).
			l.cleanup(task{s: s, parent: parent, guid: token})
			return "", time.Time{}, wrap("create", err)
		case errors.Is(err, zk.ErrConnectionClosed):
			// The node may exist, queued under v's session: wait, as a
			// queued waiter does, for the session to come back (the
			// janitor deletes the node; the caller retries) or to end
			// (the node died with it: a *SessionError, at once).
			l.forget(s, parent, token, "", err)
			if rerr := l.resume(ctx, s, v, key); rerr != nil {
				return "", time.Time{}, rerr
			}
			return "", time.Time{}, wrap("create", err)
		default:
			l.forget(s, parent, token, "", err)
			return "", time.Time{}, wrap("create", err)
		}
	}
}

// forget cleans up after a create the caller did not take: the node it
// made, or, if the outcome is unknown, the node carrying the GUID.
func (l *Locker) forget(s *session, parent, guid, p string, err error) {
	switch {
	case err == nil:
		l.cleanup(task{s: s, path: p})
	case errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionMoved):
		l.cleanup(task{s: s, parent: parent, guid: guid})
	}
}

// makeParents creates the lock's parent and its ancestors as container
// nodes, which the server deletes once their last child is gone.
// An empty container that had children can be deleted by the server
// between two of these creates: then it starts again from the top.
func (l *Locker) makeParents(ctx context.Context, s *session, parent string) error {
	var err error
	for try := 0; try < 3; try++ {
		for _, p := range ancestors(parent) {
			_, err = call(l, ctx, func() (string, error) {
				return s.conn.CreateContainer(p, nil, zk.FlagContainer, l.opts.ACL)
			}, nil)
			if errors.Is(err, zk.ErrNoAuth) && p != parent {
				// ZooKeeper checks the ACL of p's parent before whether p
				// exists: an operator's prefix under a node the user may
				// not create in is refused although it is there.
				ok, xerr := call(l, ctx, func() (bool, error) {
					ok, _, err := s.conn.Exists(p)
					return ok, err
				}, nil)
				if xerr == nil && ok {
					err = nil
				}
			}
			if errors.Is(err, zk.ErrNodeExists) {
				err = nil
			}
			if err != nil {
				err = wrap("create parent "+p, err)
				break
			}
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return err
}

// remove deletes our node after a failed attempt: at once while ctx
// allows and the session is connected, else (or if that fails) through
// the janitor.
func (l *Locker) remove(ctx context.Context, s *session, v view, own string) {
	if _, connected := s.current(); connected && ctx.Err() == nil && !l.lc.Closing().Fired() && !isClosed(v.ended) {
		_, err := call(l, ctx, func() (struct{}, error) { return struct{}{}, s.conn.Delete(own, -1) }, nil)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return
		}
	}
	l.cleanup(task{s: s, path: own})
}

// ownNode is the result of the watched read of our own node.
type ownNode struct {
	stat  *zk.Stat
	watch <-chan zk.Event
	err   error
}

// queue runs steps 2 and 3 of the recipe for our node own, created by a
// request that started at created.
func (l *Locker) queue(ctx context.Context, s *session, v view, key, parent, own, token string, created time.Time, o distlock.Options, wait bool) (distlock.Lease, error) {
	ownc := make(chan ownNode, 1)
	readOwn := func() {
		_, st, ch, err := s.conn.GetW(own)
		ownc <- ownNode{st, ch, err}
	}
	if !l.lc.Go(readOwn) { // pipelined with the first listing
		readOwn()
	}
	var me *ownNode
	getOwn := func() (*ownNode, error) {
		if me == nil {
			select {
			case r := <-ownc:
				me = &r
			case <-ctx.Done():
				return nil, ctxErr(ctx)
			}
		}
		for transient(me.err) && ctx.Err() == nil { // lost with the connection: read again once back
			if err := l.resume(ctx, s, v, key); err != nil {
				return nil, err
			}
			r, err := call(l, ctx, func() (ownNode, error) {
				_, st, ch, err := s.conn.GetW(own)
				return ownNode{st, ch, err}, nil
			}, nil)
			if err != nil {
				return nil, err
			}
			me = &r
		}
		return me, nil
	}
	name := path.Base(own)
	var ownWatch <-chan zk.Event
	watchSet := false
	fresh := created // the first listing follows the create, which went through the leader
	for {
		if isClosed(v.ended) {
			return nil, &SessionError{Key: key, Cause: s.why(v.ended)}
		}
		start := fresh
		fresh = time.Time{}
		if start.IsZero() {
			if testHookBeforeRelist != nil {
				testHookBeforeRelist(own)
			}
			start = time.Now()
			_, err := call(l, ctx, func() (string, error) { return s.conn.Sync(parent) }, nil)
			if transient(err) && ctx.Err() == nil {
				if err := l.resume(ctx, s, v, key); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, l.failed(ctx, s, v, key, "sync "+parent, err)
			}
		}
		children, err := call(l, ctx, func() ([]string, error) {
			c, _, err := s.conn.Children(parent)
			return c, err
		}, nil)
		if transient(err) && ctx.Err() == nil {
			if err := l.resume(ctx, s, v, key); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, l.failed(ctx, s, v, key, "list "+parent, err)
		}
		nodes := sortLockNodes(children)
		idx := -1
		for i, n := range nodes {
			if n.name == name {
				idx = i
				break
			}
		}
		if idx < 0 {
			if isClosed(v.ended) {
				return nil, &SessionError{Key: key, Cause: s.why(v.ended)}
			}
			return nil, fmt.Errorf("%w: zklock: %q: our queue node %s was deleted: %w", distlock.ErrUnavailable, key, name, ErrNodeDeleted)
		}
		if idx == 0 {
			r, err := getOwn()
			if err == nil {
				err = r.err
			}
			if err != nil {
				return nil, l.failed(ctx, s, v, key, "read "+own, err)
			}
			return l.grant(ctx, s, v, key, own, token, r.stat, start, o)
		}
		if !wait {
			return nil, fmt.Errorf("%w: zklock: %q is held (%d in the queue)", distlock.ErrNotAcquired, key, idx)
		}
		if !watchSet {
			r, err := getOwn()
			if err == nil {
				err = r.err
			}
			if err != nil {
				return nil, l.failed(ctx, s, v, key, "read "+own, err)
			}
			ownWatch, watchSet = r.watch, true
		}
		pred := parent + "/" + nodes[idx-1].name
		predWatch, err := call(l, ctx, func() (<-chan zk.Event, error) {
			_, _, ch, err := s.conn.GetW(pred)
			return ch, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone between the listing and the read
		}
		if transient(err) && ctx.Err() == nil {
			if err := l.resume(ctx, s, v, key); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, l.failed(ctx, s, v, key, "watch "+pred, err)
		}
		select {
		case <-predWatch:
		case <-ownWatch:
			ownWatch = nil // fired once; the next listing shows the node gone
		case <-v.ended:
		case <-ctx.Done():
			return nil, notAcquired(ctx, nil, nil)
		case <-l.lc.Closing().Done():
			return nil, distlock.ErrClosed
		}
	}
}

// resume waits, after a request made while queued failed for want of a
// connection, until the session is connected again (the queue entry
// lives on) or its epoch ends (a *SessionError).
func (l *Locker) resume(ctx context.Context, s *session, v view, key string) error {
	for {
		s.mu.Lock()
		up, connected, same := s.up, s.connected && s.sid == v.sid, s.ended == v.ended
		s.mu.Unlock()
		switch {
		case isClosed(v.ended) || !same:
			return &SessionError{Key: key, Cause: s.why(v.ended)}
		case connected:
			return nil
		}
		select {
		case <-up:
		case <-v.ended:
		case <-ctx.Done():
			return notAcquired(ctx, nil, nil)
		case <-l.lc.Closing().Done():
			return distlock.ErrClosed
		}
	}
}

// failed maps the error of a request made while queued.
func (l *Locker) failed(ctx context.Context, s *session, v view, key, op string, err error) error {
	switch {
	case ctx.Err() != nil:
		return notAcquired(ctx, nil, nil)
	case l.lc.Closing().Fired():
		return distlock.ErrClosed
	case isClosed(v.ended) || errors.Is(err, zk.ErrSessionExpired):
		return &SessionError{Key: key, Cause: s.why(v.ended)}
	}
	return wrap(op, err)
}

// testHookBeforeRelist, set by tests only, runs in queue before every
// listing but the first (that is, before its sync).
var testHookBeforeRelist func(own string)

// testHookBeforeCreate, set by tests only, runs in create before its
// request is sent.
var testHookBeforeCreate func()

// testHookBeforeHold, set by tests only, runs in grant before hold.
var testHookBeforeHold func(own string)

// grant hands out the lease of our node, first in the queue as of a
// listing that followed a request through the leader started at start.
func (l *Locker) grant(ctx context.Context, s *session, v view, key, own, token string, st *zk.Stat, start time.Time, o distlock.Options) (distlock.Lease, error) {
	d := &driver{l: l, s: s, key: key, path: own, sid: v.sid, ended: v.ended, timeout: v.timeout, version: st.Version}
	valid := d.validity(o.TTL)
	if testHookBeforeHold != nil {
		testHookBeforeHold(own)
	}
	if err := s.hold(d); err != nil {
		return nil, err
	}
	lo := o
	lo.TTL = valid // the watchdog extends every valid/3
	ls, err := lease.Grant(ctx, lease.Config{
		Key: key, Token: token, Fence: uint64(st.Czxid), Start: start,
		ValidUntil: start.Add(valid), Options: lo, Driver: d, Group: l.lc.Watchdogs(),
	})
	if err != nil {
		return nil, err
	}
	d.setLease(ls)
	l.register(ls, d)
	return ls, nil
}
