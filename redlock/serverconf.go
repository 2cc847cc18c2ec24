package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redisconf"
	"github.com/distlock/distlock/internal/resp"
)

// rejudgeAfter is how long a node that could not be reached when its
// settings were to be read is left unjudged before an acquisition tries
// again.
const rejudgeAfter = time.Second

// checkServers refuses nodes that may evict keys (see
// Options.AllowEviction and internal/redisconf): it returns an error
// matching distlock.ErrInvalidArgument that names the node, the policy and
// the fixes. Each node's settings are read (CONFIG GET maxmemory*, one
// round trip per node, in parallel, bounded by the node timeout of ttl)
// until a read finds them safe or the node refuses CONFIG; from then on
// that node costs no request. The check is a best effort, so that a dead
// node does not slow every acquisition: a node that cannot answer is not
// judged (Redlock tolerates a minority of nodes down), and acquisitions
// use it unjudged until one reads it rejudgeAfter later.
func (l *Locker) checkServers(ctx context.Context, ttl time.Duration) error {
	if l.opts.AllowEviction {
		return nil
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	now := time.Now()
	for _, n := range l.nodes {
		if n.judged.Load() || now.UnixNano() < n.judgeAfter.Load() {
			continue
		}
		wg.Go(func() {
			safe, err := n.judge(ctx, now.Add(l.opts.nodeTimeout(ttl)))
			switch {
			case safe:
				n.judged.Store(true)
			case err == nil: // unreachable
				n.judgeAfter.Store(now.Add(rejudgeAfter).UnixNano())
			case ctx.Err() != nil:
				return // the acquisition ends with ctx; the node stays unjudged
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node %s: %w", n.addr, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: redlock: %s; or set Options.AllowEviction (URL allow_eviction=true) to accept the risk",
			distlock.ErrInvalidArgument, oneLine(err))
	}
	return nil
}

// judge reads the node's maxmemory settings by deadline. It reports safe
// when the node never evicts keys or refuses CONFIG (it cannot be judged),
// and an *redisconf.EvictionError when it may evict; a node that cannot
// answer now (unreachable, too slow, BUSY) is neither (false, nil), and a
// read cut short by ctx returns ctx.Err().
func (n *node) judge(ctx context.Context, deadline time.Time) (safe bool, err error) {
	c := n.get()
	if c == nil {
		if c, err = n.dial(ctx, deadline, false); err != nil {
			return false, ctx.Err()
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	replies, err := c.roundTrip(deadline, []string{"CONFIG", "GET", redisconf.Pattern})
	if !stop() { // the caller's ctx ended: nothing was learnt about the node
		n.discard(c)
		return false, ctx.Err()
	}
	var se resp.Error
	switch {
	case errors.As(err, &se) && configRefused(se):
		n.put(c)
		return true, nil
	case err != nil:
		n.discard(c)
		return false, nil
	}
	n.put(c)
	config := map[string]string{}
	if pairs, ok := replies[0].([]any); ok {
		for i := 0; i+1 < len(pairs); i += 2 {
			k, _ := pairs[i].(string)
			v, _ := pairs[i+1].(string)
			config[k] = v
		}
	}
	if err := redisconf.Check(config); err != nil {
		return false, err
	}
	return true, nil
}

// configRefused reports whether an error reply to CONFIG GET says the
// command is renamed, disabled or not allowed to this user (the node
// cannot be judged), rather than that the node cannot answer now (BUSY,
// LOADING, MASTERDOWN...).
func configRefused(se resp.Error) bool {
	msg := string(se)
	return strings.HasPrefix(msg, "NOPERM") ||
		strings.HasPrefix(msg, "ERR unknown command") ||
		strings.HasPrefix(msg, "ERR unknown subcommand")
}

// oneLine puts the lines of a joined error on one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
