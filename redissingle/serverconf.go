package redissingle

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redisconf"
)

// checkServer refuses a server that may evict keys (see
// Options.AllowEviction and internal/redisconf): it returns an error
// matching distlock.ErrInvalidArgument that names the policy and the fixes.
// The settings are read (CONFIG GET maxmemory*, on every master in
// Cluster) until a read finds them safe or the server refuses CONFIG;
// from then on checkServer makes no request. An error reading them matches
// distlock.ErrUnavailable (and ctx.Err() if ctx ended first).
func (l *Locker) checkServer(ctx context.Context) error {
	if l.opts.AllowEviction || l.serverChecked.Load() {
		return nil
	}
	_, err := exec(l, ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, l.judgeServer(ctx)
	}, nil)
	var ee *redisconf.EvictionError
	switch {
	case err == nil:
		l.serverChecked.Store(true)
		return nil
	case errors.As(err, &ee):
		return fmt.Errorf("%w: redissingle: %w; or set Options.AllowEviction (URL allow_eviction=true) to accept the risk",
			distlock.ErrInvalidArgument, err)
	}
	if e := l.conn.connProblem("read the server's maxmemory settings", err); e != nil {
		return e
	}
	return fmt.Errorf("%w: redissingle: read the server's maxmemory settings: %w", distlock.ErrUnavailable, err)
}

// judgeServer reads and judges the settings of the server, or of every
// master of a Cluster or shard of a Ring.
func (l *Locker) judgeServer(ctx context.Context) error {
	judge := func(ctx context.Context, c *redis.Client) error {
		if err := judgeConfig(c.ConfigGet(ctx, redisconf.Pattern)); err != nil {
			return fmt.Errorf("server %s: %w", c.Options().Addr, err)
		}
		return nil
	}
	switch c := l.client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, judge)
	case *redis.Ring:
		return c.ForEachShard(ctx, judge)
	}
	return judgeConfig(l.client.ConfigGet(ctx, redisconf.Pattern))
}

// judgeConfig judges one CONFIG GET reply. A server that refuses the
// command (renamed or disabled, or not allowed to this user) cannot be
// judged and passes; a reply saying the server cannot serve now, or a
// transport error, is returned as it is.
func judgeConfig(cmd *redis.MapStringStringCmd) error {
	config, err := cmd.Result()
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) && !errors.Is(wrap("", err), distlock.ErrUnavailable) {
			return nil
		}
		return err
	}
	return redisconf.Check(config)
}
