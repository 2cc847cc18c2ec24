package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
)

var _ distlock.Inspector = (*Locker)(nil)

// maxQueueReads is how many lock nodes of one key an inspection reads, in
// queue order from the holder's: the nodes listed beyond it count as
// waiters without being read.
const maxQueueReads = 64

// queueNode is a lock node as an inspection read it.
type queueNode struct {
	name string
	stat *zk.Stat
}

// queue is one key's lock nodes as an inspection read them.
type queue struct {
	nodes  []queueNode // read and still there, in queue order: nodes[0] holds the key
	unread int         // listed beyond maxQueueReads
	data   []byte      // nodes[0]'s data: the holder's label
	listed string      // the first lock node listed: the holder when listed
}

// Inspect implements distlock.Inspector: after a sync of the lock's path
// (so that the answer follows every write the leader had applied), it
// lists the lock nodes of key and reads them in queue order. The lowest
// sequence number holds the key: Holder is distlock.HolderID of the GUID
// in its name, which is the lease's token (for a node without one, see
// Inspection in the package documentation), Fence its czxid, as the
// lease's Fence(), Label its data; TTL is 0, since the node lives as long
// as its session. Waiters counts the other lock nodes. A lock node no
// session owns (ephemeralOwner 0) is a leak: it never goes away, and TTL
// is distlock.NoExpiry when it is the holder's. An empty key or one
// longer than MaxKeyLen returns an error matching
// distlock.ErrInvalidArgument, a closed Locker distlock.ErrClosed, no
// session or a failed request distlock.ErrUnavailable. Without a deadline
// on ctx the call waits at most Options.ConnectTimeout for a session and
// then one session timeout for its requests.
func (l *Locker) Inspect(ctx context.Context, key string) (distlock.LockInfo, error) {
	if err := checkInspectKey(key); err != nil {
		return distlock.LockInfo{}, err
	}
	s, ctx, done, err := l.enterInspect(ctx)
	if err != nil {
		return distlock.LockInfo{}, err
	}
	defer done()
	q, err := l.readQueue(ctx, s, l.Path(key), true)
	if err != nil {
		return distlock.LockInfo{}, err
	}
	return q.info(key), nil
}

// ForceRelease implements distlock.Inspector: it reads the queue as
// Inspect does, then deletes the holder's lock node, as an operator
// deleting it by hand, and every lock node no session owns (the leaks
// Inspect reports). The next waiter's watch on the deleted node wakes it,
// as on a release; the evicted lease's own watch fires its Done (Err
// matches distlock.ErrLeaseLost and ErrNodeDeleted), and its Extend and
// Release, which check and delete only its own node, return
// distlock.ErrLeaseLost. The next holder's fence, its node's czxid, is
// higher. It reports whether it evicted a holder. Only the node that
// held the key when the queue was listed is deleted: if that holder
// released the key before its node was read, or between the read and the
// delete, the next holder is left alone (and ForceRelease reports false
// in the first case), so one call never evicts a later holder. If a
// delete fails, the error (distlock.ErrUnavailable for a transport
// error) says so and the report stands. Other errors as for Inspect.
func (l *Locker) ForceRelease(ctx context.Context, key string) (bool, error) {
	if err := checkInspectKey(key); err != nil {
		return false, err
	}
	s, ctx, done, err := l.enterInspect(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	parent := l.Path(key)
	q, err := l.readQueue(ctx, s, parent, true)
	if err != nil || len(q.nodes) == 0 {
		return false, err
	}
	if q.nodes[0].name != q.listed {
		// The holder listed released between the listing and its read:
		// the node now first may be a waiter just granted the key, which
		// this call was not aimed at and leaves alone.
		return false, nil
	}
	del := []string{q.nodes[0].name}
	for _, n := range q.nodes[1:] {
		if n.stat.EphemeralOwner == 0 {
			del = append(del, n.name)
		}
	}
	for _, name := range del {
		p := parent + "/" + name
		_, err := call(l, ctx, func() (struct{}, error) { return struct{}{}, s.conn.Delete(p, -1) }, nil)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return true, wrap("force release: delete "+p, err)
		}
	}
	return true, nil
}

// checkInspectKey refuses an empty key or one longer than MaxKeyLen.
func checkInspectKey(key string) error {
	if err := distlock.CheckKey(key); err != nil {
		return err
	}
	return checkKey(key)
}

// enterInspect registers an inspection with the lifecycle and returns a
// connected session and the context for the call's requests: ctx, or,
// when ctx has no deadline, ctx bounded by the session's negotiated
// timeout (after a wait for the session bounded by
// Options.ConnectTimeout). On success the caller must call done.
func (l *Locker) enterInspect(ctx context.Context) (*session, context.Context, func(), error) {
	if !l.lc.Enter() {
		return nil, nil, nil, distlock.ErrClosed
	}
	s, err := l.inspectSession()
	if err != nil {
		l.lc.Leave()
		return nil, nil, nil, err
	}
	v, err := s.ready(ctx, l.opts.ConnectTimeout)
	if err != nil {
		l.lc.Leave()
		return nil, nil, nil, err
	}
	cancel := func() {}
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, v.timeout)
	}
	return s, ctx, func() { cancel(); l.lc.Leave() }, nil
}

// inspectSession returns the session of the Locker's default TTL, opened
// if need be, or, when the Locker has all the sessions it may open
// (Options.MaxSessions), one of those.
func (l *Locker) inspectSession() (*session, error) {
	s, err := l.session(l.opts.Lock.TTL)
	if err == nil || !errors.Is(err, distlock.ErrInvalidArgument) {
		return s, err
	}
	if open := l.openSessions(); len(open) > 0 {
		return open[0], nil
	}
	return nil, err
}

// readQueue lists the lock nodes under parent, after a sync of parent if
// sync is set, and reads the first maxQueueReads of them in queue order:
// the holder's with its data, the others' stat only. Nodes deleted in
// between are left out. A missing parent is an empty queue.
func (l *Locker) readQueue(ctx context.Context, s *session, parent string, sync bool) (queue, error) {
	var q queue
	if sync {
		if _, err := call(l, ctx, func() (string, error) { return s.conn.Sync(parent) }, nil); err != nil {
			return q, wrap("sync "+parent, err)
		}
	}
	children, err := call(l, ctx, func() ([]string, error) {
		c, _, err := s.conn.Children(parent)
		return c, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return q, nil
	}
	if err != nil {
		return q, wrap("list "+parent, err)
	}
	nodes := sortLockNodes(children)
	if len(nodes) > 0 {
		q.listed = nodes[0].name
	}
	if len(nodes) > maxQueueReads {
		q.unread, nodes = len(nodes)-maxQueueReads, nodes[:maxQueueReads]
	}
	type read struct {
		data []byte
		stat *zk.Stat
	}
	for _, n := range nodes {
		p := parent + "/" + n.name
		head := len(q.nodes) == 0
		r, err := call(l, ctx, func() (read, error) {
			if head {
				data, st, err := s.conn.Get(p)
				return read{data, st}, err
			}
			ok, st, err := s.conn.Exists(p)
			if err == nil && !ok {
				err = zk.ErrNoNode
			}
			return read{nil, st}, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue // released or given up since the listing
		}
		if err != nil {
			return queue{}, wrap("read "+p, err)
		}
		if head {
			q.data = r.data
		}
		q.nodes = append(q.nodes, queueNode{n.name, r.stat})
	}
	return q, nil
}

// info is the LockInfo of key whose queue is q.
func (q queue) info(key string) distlock.LockInfo {
	info := distlock.LockInfo{Key: key, Waiters: q.unread}
	if len(q.nodes) == 0 {
		return info
	}
	head := q.nodes[0]
	info.Held = true
	info.Fence = uint64(head.stat.Czxid)
	info.Holder = holderID(head)
	info.Label = nodeLabel(q.data)
	info.Waiters += len(q.nodes) - 1
	if head.stat.EphemeralOwner == 0 {
		info.TTL = distlock.NoExpiry
	}
	var leaks []string
	for _, n := range q.nodes {
		if n.stat.EphemeralOwner == 0 {
			leaks = append(leaks, n.name)
		}
	}
	if len(leaks) > 0 {
		info.Leak = fmt.Sprintf("lock node %s not ephemeral: no session owns it, so it never goes away", strings.Join(leaks, ", "))
	}
	return info
}

// holderID is the Holder of a lock node: distlock.HolderID of the GUID of
// a protected name (_c_<guid>-lock-<seq>: the lease's token for this
// package's nodes, the UUID of a Curator client's protected create),
// else "session 0x<hex>" of the ZooKeeper session that owns the node,
// else "node <name>".
func holderID(n queueNode) string {
	if strings.HasPrefix(n.name, protectedPrefix) {
		if i := strings.LastIndex(n.name, lockMarker); i > len(protectedPrefix) {
			return distlock.HolderID(n.name[len(protectedPrefix):i])
		}
	}
	if n.stat.EphemeralOwner != 0 {
		return fmt.Sprintf("session 0x%x", n.stat.EphemeralOwner)
	}
	return "node " + n.name
}

// nodeData is the data of a lock node created with label: the label's
// bytes, nil without one.
func nodeData(label string) []byte {
	if label == "" {
		return nil
	}
	return []byte(label)
}

// nodeLabel is the Label a lock node's data gives: the data when it is a
// label distlock.WithLabel accepts (valid UTF-8, at most
// distlock.MaxLabelLen bytes), "" otherwise.
func nodeLabel(data []byte) string {
	if len(data) > distlock.MaxLabelLen || !utf8.Valid(data) {
		return ""
	}
	return string(data)
}
