package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock"
)

// DefaultDialTimeout bounds the authentication Dial makes when
// Options.DialTimeout is 0.
const DefaultDialTimeout = 5 * time.Second

// Dial returns a Locker over a client of its own for the cluster's
// endpoints ("host:port", or URLs "https://host:port"), which the Locker
// closes at Close. The client uses opts.TLS (cloned; nil: plaintext,
// unless an endpoint is an https URL, then the system's roots) and, if
// opts.Password is set, authenticates as opts.Username at once, bounded
// by opts.DialTimeout and ctx's deadline, so that a wrong password is
// Dial's error (distlock.ErrAccessDenied). Without credentials Dial does
// no I/O and a TLS mismatch is the first call's error (distlock.ErrTLS,
// after one try).
// Invalid options or no endpoints return an error matching
// distlock.ErrInvalidArgument; an unreachable cluster when
// authenticating, distlock.ErrUnavailable.
func Dial(ctx context.Context, endpoints []string, opts *Options) (*Locker, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: etcdlock: Dial: no endpoints", distlock.ErrInvalidArgument)
	}
	if o.Password != "" && o.Username == "" {
		return nil, fmt.Errorf("%w: etcdlock: a password without a user name", distlock.ErrInvalidArgument)
	}
	if o.DialTimeout < 0 {
		return nil, fmt.Errorf("%w: etcdlock: dial timeout must be > 0, got %v", distlock.ErrInvalidArgument, o.DialTimeout)
	}
	if _, err := o.resolve(); err != nil {
		return nil, err
	}
	dt := o.DialTimeout
	if dt == 0 {
		dt = DefaultDialTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		dt = max(min(dt, time.Until(dl)), time.Millisecond)
	}
	cfg := clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          dt,
		DialKeepAliveTime:    DefaultDialKeepAlive,
		DialKeepAliveTimeout: DefaultDialKeepAliveTimeout,
		Username:             o.Username,
		Password:             o.Password,
		Logger:               zap.NewNop(),
	}
	if o.TLS != nil {
		cfg.TLS = o.TLS.Clone()
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		if c := refusal(err, o.Username, o.Prefix); c != nil {
			return nil, c
		}
		if connectionFailed(err) {
			if c := diagnose(ctx, endpoints, cfg.TLS); c != nil {
				return nil, c
			}
		}
		return nil, unavailable("connect", err)
	}
	client := o
	client.TLS, client.Username, client.Password, client.DialTimeout = nil, "", "", 0
	l, err := New(cli, &client)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	l.ownClient, l.dialed, l.user, l.tls = true, true, o.Username, cfg.TLS
	return l, nil
}

// refused returns the error of a request that failed because of the
// connection settings (see refusal), or nil. For a Locker made by Dial
// (whose client's TLS configuration it knows), until a request has
// succeeded, a failure to connect is diagnosed (see diagnose) within ctx.
func (l *Locker) refused(ctx context.Context, err error) error {
	if r := refusal(err, l.user, l.opts.Prefix); r != nil {
		return r
	}
	if !l.dialed || l.connected.Load() || !connectionFailed(err) {
		return nil
	}
	return diagnose(ctx, l.cli.Endpoints(), l.tls)
}

// succeeded records that a request succeeded: the connection settings
// work, and failures are no longer diagnosed.
func (l *Locker) succeeded() { l.connected.Store(true) }

// refusal classifies err: for a failure no retry can fix (matching
// distlock.ErrAccessDenied or distlock.ErrTLS) it returns a one-line
// error naming the
// user (never the password) and what to check; otherwise nil. It
// recognizes etcd's errors and the connection errors gRPC reports
// (through a failed call, or the last one when a call timed out waiting
// for a connection).
func refusal(err error, user, prefix string) error {
	if err == nil {
		return nil
	}
	if isRefusal(err) {
		return err
	}
	who := fmt.Sprintf("user %q", user)
	if user == "" {
		who = "the client (no user name; with client certificate authentication, its certificate's common name)"
	}
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrGRPCAuthFailed):
		return fmt.Errorf("%w: etcdlock: authentication failed for user %q: wrong user name or password", distlock.ErrAccessDenied, user)
	case errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrGRPCUserEmpty):
		return fmt.Errorf("%w: etcdlock: authentication failed: the cluster has authentication enabled; give a user name and password", distlock.ErrAccessDenied)
	case errors.Is(err, rpctypes.ErrPermissionDenied), errors.Is(err, rpctypes.ErrGRPCPermissionDenied):
		return fmt.Errorf("%w: etcdlock: permission denied: %s may not read and write keys under the prefix %q: grant its role readwrite on that prefix", distlock.ErrAccessDenied, who, prefix)
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "x509:"), strings.Contains(msg, "tls: failed to verify"):
		return fmt.Errorf("%w: etcdlock: server certificate rejected (check the CA the client trusts and the host name the certificate names): %s", distlock.ErrTLS, cause(msg))
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return fmt.Errorf("%w: etcdlock: the server does not speak TLS: TLS settings may not match the server (drop TLS, or serve https client URLs): %s", distlock.ErrTLS, cause(msg))
	case strings.Contains(msg, "remote error: tls:"):
		return fmt.Errorf("%w: etcdlock: the server refused the TLS handshake (a client certificate it requires or trusts?): %s", distlock.ErrTLS, cause(msg))
	case protocolMismatch(msg):
		return fmt.Errorf("%w: etcdlock: the server did not answer as plaintext gRPC: TLS settings may not match the server (it may require TLS: set TLS, or tls_ca in the URL): %s", distlock.ErrTLS, cause(msg))
	}
	return nil
}

// protocolMismatch reports whether msg, a gRPC connection error's text,
// shows a server answering the HTTP/2 preface with bytes that are not
// HTTP/2 (a TLS record or an HTTP/1 reply reads as a frame too large, or
// as a first frame other than SETTINGS). A preface read that ended in EOF,
// a reset or a timeout is not one: a server or proxy closing new
// connections, as during a restart, does that, and a retry may succeed.
func protocolMismatch(msg string) bool {
	switch {
	case strings.Contains(msg, "frame too large"),
		strings.Contains(msg, "initial http2 frame from server is not a settings frame"),
		strings.Contains(msg, "HTTP/1.") && strings.Contains(msg, "malformed"):
		return true
	case strings.Contains(msg, "error reading server preface:"):
		return strings.Contains(msg, "PROTOCOL_ERROR") || strings.Contains(msg, "FRAME_SIZE_ERROR")
	}
	return false
}

// cause is the innermost part of a gRPC connection error's text, without
// its wrappers and quotes.
func cause(msg string) string {
	for _, sep := range []string{"authentication handshake failed: ", "desc = "} {
		if i := strings.LastIndex(msg, sep); i >= 0 {
			msg = msg[i+len(sep):]
		}
	}
	return strings.Trim(msg, `"\ `)
}

// isRefusal reports whether err is one no retry fixes (see refusal).
func isRefusal(err error) bool {
	return errors.Is(err, distlock.ErrAccessDenied) || errors.Is(err, distlock.ErrTLS)
}
