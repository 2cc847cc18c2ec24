package redissingle

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
)

var _ distlock.Inspector = (*Locker)(nil)

// inspectTimeout bounds each request of Inspect, List and ForceRelease,
// whatever the caller's context allows: the deadline of a clean-up
// request, so that an operator's call on a server that does not answer
// returns as soon as a clean-up would give up on it.
const inspectTimeout = cleanupTimeout

// The scripts of inspection (lua/inspect.lua, lua/force.lua). inspectScript
// is sent with EVAL, in a pipeline of one call per key; forceScripts[0] is
// for standalone and Sentinel, [1] for Cluster, as scriptSets.
var (
	inspectScript = luaScript("inspect.lua", false)
	forceScripts  = [2]*redis.Script{luaScript("force.lua", false), luaScript("force.lua", true)}
)

// lockState is the server's reading of one lock (lua/inspect.lua).
type lockState struct {
	typ   string // the lock key's type: "none", "string" or another
	pttl  int64  // the lock key's PTTL: -2 none, -1 no expiry
	value string // the lock key's value, if a string
	qtyp  string // the wait queue's type
	qlen  int64  // the wait queue's length, if a list
	qpttl int64  // the wait queue's PTTL
}

// Inspect implements distlock.Inspector in one request (lua/inspect.lua),
// bounded by inspectTimeout (1 s) and ctx, which reads the lock key's
// type, value and PTTL and its wait queue's length and PTTL; see
// Inspection in the package documentation for what each LockInfo field
// holds. Labels are not stored: Label is "". An empty key, or one no
// acquisition accepts (see Locker.Acquire), returns an error matching
// distlock.ErrInvalidArgument; a closed Locker distlock.ErrClosed; a
// server that cannot be reached or does not answer in time
// distlock.ErrUnavailable.
func (l *Locker) Inspect(ctx context.Context, key string) (distlock.LockInfo, error) {
	if err := l.enterInspect(key); err != nil {
		return distlock.LockInfo{}, err
	}
	defer l.lc.Leave()
	st, err := l.read(ctx, "inspect", []string{key})
	if err != nil {
		return distlock.LockInfo{}, err
	}
	return st[0].info(key), nil
}

// ForceRelease implements distlock.Inspector in two requests, each
// bounded as Inspect's: it reads the lock key as Inspect does, then
// (lua/force.lua, atomically) frees it if it still holds what was read:
// the key is handed to the first live waiter, as a release does (the
// waiter is woken over pub/sub and takes it without polling), or deleted
// if none waits. A holder that took the key after the read is left alone,
// even by a request that go-redis retries after a lost reply, and
// ForceRelease then reports false.
// The fence counter is kept, so the next holder's fence is higher. A
// lock key holding another Redis type is deleted, and a wait queue
// without expiry given the queue's TTL (3 x Options.PollInterval), so
// that ForceRelease clears every leak Inspect reports. The evicted lease
// is not told: its Done fires at its own deadline, or when its watchdog's
// next extension finds the key someone else's; its Extend and Release
// return distlock.ErrLeaseLost and never touch a later holder, since
// they compare their token with the lock's value. It reports whether it
// freed the lock key. If the reply is lost (ErrUnavailable after the
// request was sent), the key may have been freed. Other errors as for
// Inspect.
func (l *Locker) ForceRelease(ctx context.Context, key string) (bool, error) {
	if err := l.enterInspect(key); err != nil {
		return false, err
	}
	defer l.lc.Leave()
	s := forceScripts[0]
	if l.cluster {
		s = forceScripts[1]
	}
	st, err := l.read(ctx, "force release", []string{key})
	if err != nil {
		return false, err
	}
	testHookBeforeForce()
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	r, err := l.runInt(ctx, l.client, s, l.keysFor(key).all(), l.qttl, st[0].typ, st[0].value)
	if err != nil {
		return false, l.wrap("force release", err)
	}
	return r == 1, nil
}

// testHookBeforeForce runs between ForceRelease's read and its script;
// tests set it to lose the script's reply.
var testHookBeforeForce = func() {}

// enterInspect checks key as an acquisition does (distlock.CheckKey, then
// checkKey) and registers the call in flight; a nil error must be matched
// by l.lc.Leave.
func (l *Locker) enterInspect(key string) error {
	if err := distlock.CheckKey(key); err != nil {
		return err
	}
	if err := checkKey(l.opts.Prefix, key); err != nil {
		return err
	}
	if !l.lc.Enter() {
		return distlock.ErrClosed
	}
	return nil
}

// read runs lua/inspect.lua for each of keys in one pipeline (which a
// Cluster client splits by node), bounded by inspectTimeout and ctx.
// Errors are wrapped for op.
func (l *Locker) read(ctx context.Context, op string, keys []string) ([]lockState, error) {
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	cmds, err := exec(l, ctx, func(ctx context.Context) ([]*redis.Cmd, error) {
		pipe := l.client.Pipeline()
		cmds := make([]*redis.Cmd, len(keys))
		for i, key := range keys {
			k := l.keysFor(key)
			cmds[i] = inspectScript.Eval(ctx, pipe, []string{k.lock, k.queue})
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}, nil)
	if err != nil {
		return nil, l.wrap(op, err)
	}
	out := make([]lockState, len(keys))
	for i, c := range cmds {
		if out[i], err = parseState(c.Val()); err != nil {
			return nil, fmt.Errorf("redissingle: %s: key %s: %w", op, quoteShort(keys[i]), err)
		}
	}
	return out, nil
}

// parseState decodes lua/inspect.lua's reply.
func parseState(v any) (lockState, error) {
	vs, ok := v.([]any)
	if !ok || len(vs) != 6 {
		return lockState{}, fmt.Errorf("unexpected inspect reply %T", v)
	}
	var s lockState
	var oks [6]bool
	s.typ, oks[0] = vs[0].(string)
	s.pttl, oks[1] = vs[1].(int64)
	s.value, oks[2] = vs[2].(string)
	s.qtyp, oks[3] = vs[3].(string)
	s.qlen, oks[4] = vs[4].(int64)
	s.qpttl, oks[5] = vs[5].(int64)
	for _, ok := range oks {
		if !ok {
			return lockState{}, fmt.Errorf("unexpected inspect reply %v", vs)
		}
	}
	return s, nil
}

// info is the LockInfo of key from its state (see Inspection in the
// package documentation).
func (s lockState) info(key string) distlock.LockInfo {
	info := distlock.LockInfo{Key: key}
	var leak []string
	if s.qtyp == "list" {
		info.Waiters = int(s.qlen)
	}
	if s.typ != "none" {
		info.Held = true // no acquisition can take the key while it exists
		switch {
		case s.pttl == -1:
			info.TTL = distlock.NoExpiry
		case s.pttl >= 0:
			info.TTL = time.Duration(max(s.pttl, 1)) * time.Millisecond
		}
		token, fence, _ := strings.Cut(s.value, ":")
		switch {
		case s.typ != "string":
			leak = append(leak, "the lock key holds a "+s.typ+", not a token")
		case token == "":
			leak = append(leak, "the lock key's value has no token")
		default:
			info.Holder = distlock.HolderID(token)
			info.Fence, _ = strconv.ParseUint(fence, 10, 64) // "" or not a number: 0
		}
		if s.pttl == -1 {
			leak = append(leak, "the lock key has no expiry")
		}
	}
	switch {
	case s.qtyp != "none" && s.qtyp != "list":
		leak = append(leak, "the wait queue holds a "+s.qtyp+", not a list")
	case s.qtyp == "list" && s.qpttl == -1:
		leak = append(leak, "the wait queue has no expiry")
	}
	info.Leak = strings.Join(leak, ", ")
	return info
}
