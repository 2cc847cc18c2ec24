package zklock

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

func init() {
	distlock.Register("zk", open)
}

// open is the Opener of "zk://" URLs:
// zk://[user:password@]host1[:port],host2[:port],...[/prefix][?params].
// A missing port is 2181; net/url checks the text after the last colon as
// a port, so either every host names its port or the last one does. The
// userinfo, if any, gives Username and Password (digest credentials); the
// path, if any, is the Prefix; the TLS parameters (urlopt.TLSParams:
// tls, tls_ca, tls_cert, tls_key, tls_server_name,
// tls_insecure_skip_verify) give Options.TLS. It does no I/O. Errors
// never carry the password.
func open(_ context.Context, u *url.URL) (distlock.Locker, error) {
	if u.Opaque != "" || u.Host == "" {
		return nil, fmt.Errorf("%w: zklock: URL %q has no hosts", distlock.ErrInvalidArgument, u.Redacted())
	}
	var servers []string
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, fmt.Errorf("%w: zklock: empty host in %q", distlock.ErrInvalidArgument, u.Host)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "2181")
		}
		servers = append(servers, h)
	}
	p := urlopt.New(u)
	opts := Options{
		Lock:           p.LockOptions(),
		Prefix:         strings.TrimSuffix(u.Path, "/"),
		SessionTimeout: p.Duration("session_timeout", 0),
		SafeFraction:   p.Float("safe_fraction", DefaultSafeFraction),
		ConnectTimeout: p.Duration("connect_timeout", DefaultConnectTimeout),
		MaxSessions:    p.Int("max_sessions", DefaultMaxSessions),
		TickTime:       p.Duration("tick_time", DefaultTickTime),
		TLS:            p.TLS(false),
	}
	if u.User != nil {
		opts.Username = u.User.Username()
		opts.Password, _ = u.User.Password()
	}
	if err := p.Done(); err != nil {
		return nil, err
	}
	return New(servers, &opts)
}
