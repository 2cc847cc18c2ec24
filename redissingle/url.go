package redissingle

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

// params are the query parameters of Options, which the Locker reads
// itself with the TLS parameters (urlopt.TLSParams) and, for Sentinel,
// sentinelParams; the others go to go-redis's URL parser, which rejects
// those it does not know.
var params = []string{"ttl", "autoextend", "retry_min", "retry_max", "prefix", "wait_replicas", "wait_timeout", "poll_interval", "allow_eviction"}

// sentinelParams are the Sentinel credentials, read by the Locker.
var sentinelParams = []string{"sentinel_username", "sentinel_password"}

// A form is one kind of deployment a URL names.
type form int

const (
	standalone form = iota // redis://, rediss://
	sentinel               // redis+sentinel://, rediss+sentinel://
	cluster                // redis+cluster://, rediss+cluster://
)

// schemes maps each scheme to its form and whether it asks for TLS.
var schemes = map[string]struct {
	form form
	tls  bool
}{
	"redis":           {standalone, false},
	"rediss":          {standalone, true},
	"redis+sentinel":  {sentinel, false},
	"rediss+sentinel": {sentinel, true},
	"redis+cluster":   {cluster, false},
	"rediss+cluster":  {cluster, true},
}

func init() {
	names := make([]string, 0, len(schemes))
	for s := range schemes {
		names = append(names, s)
	}
	slices.Sort(names)
	for _, s := range names {
		distlock.Register(s, open)
	}
}

// open is the Opener of every scheme in schemes. The Locker owns the
// client it creates: Close closes it. It does no I/O (the server's
// eviction settings are checked before the first acquisition, and a
// wrong password or TLS setting is seen by the first request).
func open(_ context.Context, u *url.URL) (distlock.Locker, error) {
	client, opts, err := parseURL(u)
	if err != nil {
		return nil, err
	}
	l, err := New(client, opts)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	l.owned = true
	return l, nil
}

// parseURL returns the client a URL describes, not yet connected, and the
// Locker's options. Errors match distlock.ErrInvalidArgument and quote
// neither the userinfo nor the query.
func parseURL(u *url.URL) (redis.UniversalClient, *Options, error) {
	s, ok := schemes[u.Scheme]
	if !ok {
		return nil, nil, fmt.Errorf("%w: redissingle: unknown scheme %q", distlock.ErrInvalidArgument, u.Scheme)
	}
	names := slices.Concat(params, urlopt.TLSParams)
	if s.form == sentinel {
		names = append(names, sentinelParams...)
	}
	ours, rest := urlopt.Split(u, names)
	p := urlopt.New(ours)
	opts := &Options{
		Lock:          p.LockOptions(),
		Prefix:        p.String("prefix", ""),
		WaitReplicas:  p.Int("wait_replicas", 0),
		WaitTimeout:   p.Duration("wait_timeout", DefaultWaitTimeout),
		PollInterval:  p.Duration("poll_interval", DefaultPollInterval),
		AllowEviction: p.Bool("allow_eviction", false),
	}
	c := conn{tls: p.TLS(s.tls)}
	c.user, c.password = credentials(u)
	if s.form == sentinel {
		c.sentinelUser = p.String("sentinel_username", "")
		c.sentinelPassword = p.String("sentinel_password", "")
	}
	if err := p.Done(); err != nil {
		return nil, nil, err
	}
	var (
		client redis.UniversalClient
		err    error
	)
	switch s.form {
	case standalone:
		var ro *redis.Options
		if ro, err = standaloneOptions(u, rest, c); err == nil {
			client = redis.NewClient(ro)
		}
	case sentinel:
		var fo *redis.FailoverOptions
		if fo, err = failoverOptions(u, rest, c); err == nil {
			client = redis.NewFailoverClient(fo)
		}
	case cluster:
		var co *redis.ClusterOptions
		if co, err = clusterOptions(u, rest, c); err == nil {
			client = redis.NewClusterClient(co)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: redissingle: %s URL: %v", distlock.ErrInvalidArgument, u.Scheme, err)
	}
	return client, opts, nil
}

// goRedisURL is rest as go-redis's parsers take it: scheme redis (the
// Locker sets TLS itself), no userinfo (the Locker sets the credentials
// itself), host and path as given.
func goRedisURL(rest *url.URL, host, path string) string {
	g := url.URL{Scheme: "redis", Host: host, Path: path, RawQuery: rest.RawQuery}
	return g.String()
}

// goRedisErr strips the URL from a url.Error of go-redis's parser.
func goRedisErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
