package redlock

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/resp"
)

// result is one node's answer in a fan-out.
type result struct {
	v   any   // the reply, if err is nil (int64 for every script)
	err error // transport error, timeout, or a server error reply
	// late: the node did not answer in time and the connection went to
	// the late func, which follows up on it.
	late     bool
	lateConn *conn // until startLate hands it to the late func
}

// Errors of a node that did not answer.
var (
	errTimeout = errors.New("no reply within the node timeout")
)

// fanout runs one command on each node (cmd(i) == nil: skip node i),
// multiplexed: it writes to every node that has an idle connection, then
// reads every reply, each by deadline (or until ctx ends); nodes without
// an idle connection are dialled concurrently meanwhile, each on its own
// goroutine, which sends and reads too. It returns each node's result
// and, for nodes that answered, the connection, which the caller must
// hand back with done (it may pipeline more requests on it first). If a
// node does not answer in time before any byte of its reply arrived and
// late is not nil, the connection is kept for late(i), which runs on a
// goroutine owned by the Locker and may pipeline a clean-up request
// behind the unanswered one; else the connection is closed.
func (l *Locker) fanout(ctx context.Context, deadline time.Time, cmd func(i int) [][]string, late func(i int, c *conn)) ([]result, []*conn) {
	n := len(l.nodes)
	// One allocation for the per-node state.
	buf := make([]*conn, 3*n)
	res := make([]result, n)
	conns, dialed, ready := buf[:n:n], buf[n:2*n:2*n], buf[2*n:]
	cmds := make([][][]string, n)
	var dials sync.WaitGroup
	dialing := false
	for i, nd := range l.nodes {
		if cmds[i] = cmd(i); cmds[i] == nil {
			continue
		}
		if conns[i] = nd.get(); conns[i] == nil {
			dialing = true
			dials.Add(1)
			go func() {
				defer dials.Done()
				c, err := nd.dial(ctx, deadline, false)
				if err != nil {
					res[i].err = err
					return
				}
				one := []*conn{c}
				stop, stopped := interrupt(ctx, one)
				if l.send(i, c, cmds[i], deadline, &res[i]) {
					l.receive(ctx, i, c, len(cmds[i]), &res[i], late, &one[0])
				}
				if testHookBeforeDialWait != nil {
					testHookBeforeDialWait()
				}
				wait(stop, stopped)
				l.startLate(i, &res[i], late)
				dialed[i] = one[0]
			}()
			continue
		}
		if !l.send(i, conns[i], cmds[i], deadline, &res[i]) {
			conns[i] = nil
		}
	}
	copy(ready, conns) // without the dialled ones, which their goroutines handle
	stop, stopped := interrupt(ctx, ready)
	for i, c := range ready {
		if c != nil {
			l.receive(ctx, i, c, len(cmds[i]), &res[i], late, &conns[i])
		}
	}
	if testHookBeforeWait != nil {
		testHookBeforeWait()
	}
	wait(stop, stopped)
	for i, c := range ready {
		if c != nil {
			l.startLate(i, &res[i], late)
		}
	}
	if dialing {
		dials.Wait()
		for i, c := range dialed {
			if c != nil {
				conns[i] = c
			}
		}
	}
	return res, conns
}

// testHookBeforeWait runs in fanout after the ready replies, before wait (nil in production; tests set it).
var testHookBeforeWait func()

// testHookBeforeDialWait runs in fanout's dial goroutine after its reply, before wait (nil in production; tests set it).
var testHookBeforeDialWait func()

// interrupt makes ctx's end interrupt every read and write on conns. The
// caller must call wait(stop, stopped) before the connections are reused.
func interrupt(ctx context.Context, conns []*conn) (func() bool, chan struct{}) {
	if ctx.Done() == nil {
		return nil, nil
	}
	snap, ch := slices.Clone(conns), make(chan struct{})
	return context.AfterFunc(ctx, func() {
		defer close(ch)
		for _, c := range snap {
			if c != nil {
				_ = c.nc.SetDeadline(time.Unix(1, 0))
			}
		}
	}), ch
}

func wait(stop func() bool, stopped chan struct{}) {
	if stop != nil && !stop() {
		<-stopped // it ran: let it finish
	}
}

// Graces for a client that ran late: the operation's deadline can pass
// while the client itself waits for a CPU (on a loaded host, tens of
// milliseconds), with the reply already in the socket's buffer. A request
// is written even then, with writeGrace to do it, and a read that times
// out is tried once more for readGrace, so that a reply that came in time
// is read. A frozen node costs at most readGrace more per node (the
// grace reads run one after another), a full send buffer writeGrace more;
// neither lengthens a validity, which counts from before the requests.
const (
	writeGrace = 5 * time.Millisecond
	readGrace  = time.Millisecond
)

// send writes node i's commands to c and flushes them; on failure it
// records the error, closes c and returns false.
// The deadlines are set before the commands are written: a command
// longer than the write buffer (a long key) goes out while it is written.
func (l *Locker) send(i int, c *conn, cmds [][]string, deadline time.Time, r *result) bool {
	if now := time.Now(); deadline.Sub(now) >= writeGrace {
		r.err = c.nc.SetDeadline(deadline)
	} else if r.err = c.nc.SetReadDeadline(deadline); r.err == nil {
		r.err = c.nc.SetWriteDeadline(now.Add(writeGrace))
	}
	if r.err == nil {
		for _, cmd := range cmds {
			c.write(cmd...)
		}
		r.err = c.bw.Flush()
	}
	if r.err != nil {
		l.nodes[i].discard(c)
		return false
	}
	return true
}

// receive reads node i's m replies on c into r (r.v is the reply if m
// is 1, else the []any of the replies; r.err the first server error
// reply, if any) and sets *keep to c if c can be reused by the caller,
// else to nil (c closed, or handed to late).
func (l *Locker) receive(ctx context.Context, i int, c *conn, m int, r *result, late func(int, *conn), keep **conn) {
	*keep = nil
	var vs []any
	if m > 1 {
		vs = make([]any, m)
	}
	noscript := false
	graced := false
	for k := range m {
		v, err := c.next()
		if err != nil && clean(err) && !graced && ctx.Err() == nil {
			graced = true // see readGrace
			if c.nc.SetReadDeadline(time.Now().Add(readGrace)) == nil {
				v, err = c.next()
			}
		}
		if err != nil {
			if clean(err) {
				err = errors.Join(errTimeout, err)
			}
			if ctx.Err() != nil {
				err = errors.Join(context.Cause(ctx), err)
			}
			r.err, r.v = err, nil
			if clean(err) && late != nil {
				c.pending += m - k           // the unanswered replies
				r.late, r.lateConn = true, c // started by startLate
				return
			}
			l.nodes[i].discard(c)
			return
		}
		if se, ok := v.(resp.Error); ok {
			if r.err == nil {
				r.err = se
			}
			noscript = noscript || strings.HasPrefix(string(se), "NOSCRIPT")
		}
		if m == 1 {
			r.v = v
		} else {
			vs[k] = v
		}
	}
	if m > 1 {
		r.v = vs
	}
	if r.err != nil {
		r.v = nil
	}
	if noscript { // scripts flushed: reconnect (and reload) next time
		l.nodes[i].discard(c)
		return
	}
	*keep = c
}

// startLate runs late on the connection receive kept for it, on a
// goroutine owned by the Locker. fanout calls it only once ctx's
// interruption of the fan-out's connections is over (wait), so that a ctx
// ending later cannot set a past deadline under the late request.
func (l *Locker) startLate(i int, r *result, late func(int, *conn)) {
	c := r.lateConn
	if c == nil {
		return
	}
	r.lateConn = nil
	if !l.lc.Go(func() { late(i, c) }) { // closed: its connections are closed too
		l.nodes[i].discard(c)
	}
}

// done hands the connections of a fan-out back to their pools.
func (l *Locker) done(conns []*conn) {
	for i, c := range conns {
		if c != nil {
			l.nodes[i].put(c)
		}
	}
}

// lateCleanup returns a late func that pipelines cmd(i) behind the
// unanswered request and waits up to wait for both replies, then keeps
// the connection if both came. If either failed and failed is not nil, it
// calls failed(i).
func (l *Locker) lateCleanup(wait time.Duration, cmd func(i int) []string, failed func(i int)) func(int, *conn) {
	return func(i int, c *conn) {
		nd := l.nodes[i]
		_, err := c.roundTrip(time.Now().Add(wait), cmd(i))
		if err != nil && failed != nil {
			failed(i)
		}
		if err != nil {
			var se resp.Error
			if !errors.As(err, &se) {
				nd.discard(c)
				return
			}
		}
		nd.put(c)
	}
}
