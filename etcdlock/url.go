package etcdlock

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

func init() {
	distlock.Register("etcd", open)
}

// Defaults of the client opened from a URL.
const (
	// DefaultDialKeepAlive is the gRPC keepalive ping interval of the
	// client a URL opens (gRPC's minimum is 10 s), and DefaultDialKeepAliveTimeout
	// the time a ping may go unanswered before the connection is dropped.
	DefaultDialKeepAlive        = 10 * time.Second
	DefaultDialKeepAliveTimeout = 3 * time.Second
)

// open is the Opener of "etcd://" URLs (see the package documentation).
func open(ctx context.Context, u *url.URL) (distlock.Locker, error) {
	if u.Opaque != "" || u.Host == "" {
		return nil, fmt.Errorf("%w: etcdlock: URL %q has no hosts", distlock.ErrInvalidArgument, u.Redacted())
	}
	var eps []string
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, fmt.Errorf("%w: etcdlock: empty host in %q", distlock.ErrInvalidArgument, u.Host)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "2379")
		}
		eps = append(eps, h)
	}
	p := urlopt.New(u)
	opts := Options{
		Lock:           p.LockOptions(),
		RequestTimeout: p.Duration("request_timeout", DefaultRequestTimeout),
		PollInterval:   p.Duration("poll_interval", DefaultPollInterval),
		DialTimeout:    p.Duration("dial_timeout", DefaultDialTimeout),
		TLS:            p.TLS(false),
	}
	if err := p.Done(); err != nil {
		return nil, err
	}
	if opts.DialTimeout <= 0 {
		return nil, fmt.Errorf("%w: etcdlock: dial_timeout must be > 0, got %v", distlock.ErrInvalidArgument, opts.DialTimeout)
	}
	if prefix := strings.TrimPrefix(u.Path, "/"); prefix != "" {
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		opts.Prefix = prefix
	}
	if u.User != nil {
		opts.Username = u.User.Username()
		opts.Password, _ = u.User.Password()
		if opts.Password == "" {
			return nil, fmt.Errorf("%w: etcdlock: user %q without a password in %q", distlock.ErrInvalidArgument, opts.Username, u.Redacted())
		}
	}
	return Dial(ctx, eps, &opts)
}
