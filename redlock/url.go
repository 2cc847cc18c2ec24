package redlock

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

func init() {
	distlock.Register("redlock", open)
}

// open is the Opener of "redlock://" URLs:
// redlock://[user:password@]host1[:port],host2[:port],...[/db][?params]. A
// missing port is 6379; net/url checks the text after the last colon as a
// port, so either every host names its port or the last one does. The
// TLS parameters (urlopt.TLSParams) set Options.TLS for every node; the
// scheme implies no TLS. It does no I/O, but reads the files tls_ca,
// tls_cert and tls_key name.
func open(_ context.Context, u *url.URL) (distlock.Locker, error) {
	if u.Opaque != "" || u.Host == "" {
		return nil, fmt.Errorf("%w: redlock: URL %q has no hosts", distlock.ErrInvalidArgument, u.Redacted())
	}
	var addrs []string
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, fmt.Errorf("%w: redlock: empty host in %q", distlock.ErrInvalidArgument, u.Host)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "6379")
		}
		addrs = append(addrs, h)
	}
	p := urlopt.New(u)
	opts := Options{
		Lock:          p.LockOptions(),
		NodeTimeout:   p.Duration("node_timeout", 0),
		DriftFactor:   p.Float("drift_factor", 0.01),
		DriftFixed:    p.Duration("drift_fixed", 2e6),
		DialTimeout:   p.Duration("dial_timeout", DefaultDialTimeout),
		Prefix:        p.String("prefix", ""),
		PollInterval:  p.Duration("poll_interval", DefaultPollInterval),
		AllowEviction: p.Bool("allow_eviction", false),
		TLS:           p.TLS(false),
	}
	if err := p.Done(); err != nil {
		return nil, err
	}
	if u.User != nil {
		opts.Username = u.User.Username()
		opts.Password, _ = u.User.Password()
		if opts.Password == "" { // redlock://password@hosts
			opts.Username, opts.Password = "", opts.Username
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil {
			return nil, fmt.Errorf("%w: redlock: database %q is not a number", distlock.ErrInvalidArgument, db)
		}
		opts.DB = n
	}
	return New(addrs, &opts)
}
