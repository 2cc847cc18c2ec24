package redissingle

import (
	"context"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

// params are the query parameters the Locker reads itself; the others go
// to redis.ParseURL, which rejects those it does not know.
var params = []string{"ttl", "autoextend", "retry_min", "retry_max", "prefix", "wait_replicas", "wait_timeout", "poll_interval", "allow_eviction"}

func init() {
	distlock.Register("redis", open)
	distlock.Register("rediss", open)
}

// open is the Opener of "redis://" and "rediss://" URLs. The Locker owns
// the client it creates: Close closes it. It does no I/O (the server's
// eviction settings are checked before the first acquisition).
func open(_ context.Context, u *url.URL) (distlock.Locker, error) {
	ours, rest := urlopt.Split(u, params)
	p := urlopt.New(ours)
	opts := Options{
		Lock:          p.LockOptions(),
		Prefix:        p.String("prefix", ""),
		WaitReplicas:  p.Int("wait_replicas", 0),
		WaitTimeout:   p.Duration("wait_timeout", DefaultWaitTimeout),
		PollInterval:  p.Duration("poll_interval", DefaultPollInterval),
		AllowEviction: p.Bool("allow_eviction", false),
	}
	if err := p.Done(); err != nil {
		return nil, err
	}
	ro, err := redis.ParseURL(rest.String())
	if err != nil {
		return nil, fmt.Errorf("%w: redissingle: %v", distlock.ErrInvalidArgument, err)
	}
	client := redis.NewClient(ro)
	l, err := New(client, &opts)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	l.owned = true
	return l, nil
}
