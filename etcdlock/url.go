package etcdlock

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

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
func open(_ context.Context, u *url.URL) (distlock.Locker, error) {
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
	}
	dialTimeout := p.Duration("dial_timeout", 5*time.Second)
	if err := p.Done(); err != nil {
		return nil, err
	}
	if prefix := strings.TrimPrefix(u.Path, "/"); prefix != "" {
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		opts.Prefix = prefix
	}
	if _, err := opts.resolve(); err != nil {
		return nil, err
	}
	cfg := clientv3.Config{
		Endpoints:            eps,
		DialKeepAliveTime:    DefaultDialKeepAlive,
		DialKeepAliveTimeout: DefaultDialKeepAliveTimeout,
		Logger:               zap.NewNop(),
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
		cfg.Password, _ = u.User.Password()
		cfg.DialTimeout = dialTimeout
	}
	if dialTimeout <= 0 {
		return nil, fmt.Errorf("%w: etcdlock: dial_timeout must be > 0, got %v", distlock.ErrInvalidArgument, dialTimeout)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, unavailable("connect", err)
	}
	l, err := New(cli, &opts)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	l.ownClient = true
	return l, nil
}
