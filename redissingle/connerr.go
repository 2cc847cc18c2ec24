package redissingle

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redisauth"
)

// connInfo is what the Locker knows of its client's connection settings,
// to explain a failure to connect: the ACL user ("" for Redis's default
// user) and whether the client speaks TLS. It holds no secret.
type connInfo struct {
	user string
	tls  bool
}

// clientConn reads the connection settings of c, where its type exposes
// them (*redis.Client, including a Sentinel failover client, and
// *redis.ClusterClient).
func clientConn(c redis.UniversalClient) connInfo {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		return connInfo{user: o.Username, tls: o.TLSConfig != nil}
	case *redis.ClusterClient:
		o := c.Options()
		return connInfo{user: o.Username, tls: o.TLSConfig != nil}
	}
	return connInfo{}
}

// wrap is Locker.wrap for a Locker whose connection settings are unknown.
func wrap(op string, err error) error { return connInfo{}.wrap(op, err) }

// wrap maps an error of operation op to the distlock sentinels. Failures
// to authenticate or to set up TLS match distlock.ErrAccessDenied or
// distlock.ErrTLS (and so distlock.ErrUnavailable) where they are
// certain, else distlock.ErrUnavailable, and say what to check (see
// connProblem); otherwise, replies saying the server
// cannot serve now and every transport error (refused, reset, timeout, a
// context that ended) match distlock.ErrUnavailable and keep the cause;
// those after which the request may have been executed also match
// errUnknown. Other server replies (a key of the wrong type, a server too
// old for SET NX GET) are returned as they are, wrapped.
func (ci connInfo) wrap(op string, err error) error {
	if e := ci.connProblem(op, err); e != nil {
		return e
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		for _, p := range transient {
			if redis.HasErrorPrefix(err, p) {
				return fmt.Errorf("%w: redissingle: %s: %w", distlock.ErrUnavailable, op, err)
			}
		}
		if strings.HasPrefix(rerr.Error(), "NOPERM") {
			return fmt.Errorf("redissingle: %s: ACL user %s may not run a command the Locker needs (see the package documentation, Connections): %w", op, ci.userName(), err)
		}
		return fmt.Errorf("redissingle: %s: %w", op, err)
	}
	if notSent(err) {
		return fmt.Errorf("%w: redissingle: %s: %w", distlock.ErrUnavailable, op, err)
	}
	return fmt.Errorf("%w: redissingle: %s: %w: %w", distlock.ErrUnavailable, op, errUnknown, err)
}

// userName is the ACL user as the errors name it.
func (ci connInfo) userName() string {
	if ci.user == "" {
		return `"default"`
	}
	return fmt.Sprintf("%q", ci.user)
}

// connProblem returns, for a failure to authenticate or to set up TLS, an
// error matching distlock.ErrUnavailable that names the problem and what
// to check, keeping the cause; nil for any other error. Refused
// credentials match distlock.ErrAccessDenied; a refused certificate, a
// server that answers a handshake in plaintext and a refused handshake
// match distlock.ErrTLS. A TLS handshake that times out and a plaintext
// connection the server closes say TLS settings may not match but match
// only distlock.ErrUnavailable, since a slow or restarting server does the
// same. Only a connection closed by a plaintext client's server may have
// lost a request in flight (it matches errUnknown); the others fail
// before any command runs.
// Neither go-redis's replies nor crypto/tls's errors quote a password.
func (ci connInfo) connProblem(op string, err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		if redisauth.Refused(rerr.Error()) {
			return fmt.Errorf("%w: redissingle: %s: authentication failed for user %s: check the client's username and password: %w",
				distlock.ErrAccessDenied, op, ci.userName(), err)
		}
		return nil
	}
	var (
		verr  *tls.CertificateVerificationError
		uerr  x509.UnknownAuthorityError
		herr  x509.HostnameError
		cierr x509.CertificateInvalidError
		rherr tls.RecordHeaderError
		oerr  *net.OpError
	)
	switch {
	case errors.As(err, &verr), errors.As(err, &uerr), errors.As(err, &herr), errors.As(err, &cierr):
		return fmt.Errorf("%w: redissingle: %s: TLS: the server's certificate was refused (check tls_ca / the client's RootCAs and tls_server_name / ServerName): %w",
			distlock.ErrTLS, op, err)
	case errors.As(err, &rherr):
		return fmt.Errorf("%w: redissingle: %s: TLS: the server does not speak TLS; TLS settings may not match the server (use redis:// without tls_ parameters, or no TLSConfig): %w",
			distlock.ErrTLS, op, err)
	case errors.As(err, &oerr) && oerr.Op == "remote error":
		return fmt.Errorf("%w: redissingle: %s: TLS: the server refused the handshake (does it require a client certificate, tls_cert and tls_key?): %w",
			distlock.ErrTLS, op, err)
	case ci.tls && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: redissingle: %s: timed out (with TLS on, this is also how a server that does not speak TLS fails the handshake: TLS settings may not match the server): %w: %w",
			distlock.ErrUnavailable, op, errUnknown, err)
	case !ci.tls && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return fmt.Errorf("%w: redissingle: %s: the server closed the connection; TLS settings may not match the server (a TLS-only server needs rediss:// or the client's TLSConfig): %w: %w",
			distlock.ErrUnavailable, op, errUnknown, err)
	}
	return nil
}

// notSent reports errors raised before the request could reach the
// server: no connection could be made or had.
func notSent(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	return errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout)
}

// wrap is connInfo.wrap with the Locker's connection settings, so that a
// failure to authenticate names the user.
func (l *Locker) wrap(op string, err error) error { return l.conn.wrap(op, err) }
