package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lifecycle"
	"github.com/distlock/distlock/internal/redisauth"
	"github.com/distlock/distlock/internal/resp"
)

// nodeTLS returns the TLS configuration of the node at addr, or nil for
// plaintext: Options.NodeTLS(addr) if NodeTLS is set, else Options.TLS,
// cloned, with the node's host as ServerName if it has none (as
// tls.Dial does).
func nodeTLS(o *Options, addr string) *tls.Config {
	cfg := o.TLS
	if o.NodeTLS != nil {
		cfg = o.NodeTLS(addr)
	}
	if cfg == nil {
		return nil
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	return cfg
}

// secure runs c's TLS handshake, bounded by dialEnd (the dial timeout)
// and Close alone, while the caller waits until ctx ends (deadline, its
// node deadline). A handshake still running then goes on on a goroutine
// of the Locker: if it succeeds, the connection, set up, goes to the idle
// pool, so that the node's next operation finds it ready, and a handshake
// slower than the node timeout does not fail every operation anew. A
// pub/sub connection's handshake, and one whose caller waits until
// dialEnd anyway, runs on the caller's goroutine, by ctx. On error c is
// discarded.
func (n *node) secure(ctx context.Context, c *conn, deadline, dialEnd time.Time, pubsub bool) error {
	if pubsub || !deadline.Before(dialEnd) {
		err := c.handshake(ctx, n.tls)
		if err != nil {
			n.discard(c)
		}
		return err
	}
	handshake := func(context.Context) (struct{}, error) {
		hctx, cancel := context.WithDeadline(n.l.lc.Closing().Context(), dialEnd)
		defer cancel()
		_ = c.raw.SetDeadline(dialEnd)
		return struct{}{}, c.handshake(hctx, n.tls)
	}
	abandoned := func(_ struct{}, err error) {
		if err != nil || pubsub {
			n.discard(c)
			return
		}
		n.setUp(c, false)
		n.put(c)
	}
	ended := func(ctx context.Context) error {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return errors.Join(context.Cause(ctx), errHandshakeLate)
		}
		return errHandshakeLate
	}
	_, err := lifecycle.Detach(&n.l.lc, ctx, handshake, abandoned, ended)
	if err != nil && !errors.Is(err, errHandshakeLate) { // else abandoned has c
		n.discard(c)
	}
	return err
}

// errHandshakeLate: the handshake goes on after the caller left.
var errHandshakeLate = errors.New("TLS handshake unfinished within the node timeout (it goes on in the background, up to the dial timeout, for the next operation); if this persists, TLS settings may not match the server")

// handshake makes c a TLS connection with cfg, by ctx (whose deadline is
// the dial's). On error c is left as it was, for the caller to discard.
func (c *conn) handshake(ctx context.Context, cfg *tls.Config) error {
	tc := tls.Client(c.raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return handshakeError(err)
	}
	c.nc, c.tls = tc, true
	c.br.Reset(tc)
	c.bw.Reset(tc)
	return nil
}

// classed is a node's error that matches kind (distlock.ErrAccessDenied
// or distlock.ErrTLS) too, with the text of err alone.
type classed struct{ err, kind error }

func (e classed) Error() string   { return e.err.Error() }
func (e classed) Unwrap() []error { return []error{e.err, e.kind} }

// handshakeError says what a failed TLS handshake means and what to
// check. A refused certificate or handshake, and a server answering in
// plaintext, match distlock.ErrTLS; a handshake that timed out or that
// the server closed does not, as a slow or restarting server does the
// same.
func handshakeError(err error) error {
	var (
		verify *tls.CertificateVerificationError
		header tls.RecordHeaderError
		op     *net.OpError
	)
	switch {
	case errors.As(err, &verify):
		return classed{fmt.Errorf("TLS: server certificate not accepted (%w): check the CA (Options.TLS RootCAs, URL tls_ca) and the name it is verified against (ServerName, URL tls_server_name; default: the node's host)", err), distlock.ErrTLS}
	case errors.As(err, &header):
		return classed{fmt.Errorf("TLS handshake: the server did not answer in TLS (%w): TLS settings may not match the server, which may serve plaintext", err), distlock.ErrTLS}
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("TLS handshake: no answer within the dial timeout (%w): TLS settings may not match the server (a plaintext server does not answer a handshake)", err)
	case errors.As(err, &op) && op.Op == "remote error":
		return classed{fmt.Errorf("TLS handshake: refused by the server (%w): check the client certificate (Options.TLS Certificates, URL tls_cert and tls_key)", err), distlock.ErrTLS}
	case closedByPeer(err):
		return fmt.Errorf("TLS handshake: the server closed the connection (%w): TLS settings may not match the server", err)
	}
	return fmt.Errorf("TLS handshake: %w", err)
}

// closedByPeer reports whether err says the server ended the connection.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// firstReplyError says what a new connection that failed before its
// first reply (other than by a timeout) may mean: over plaintext, a TLS
// server closing it or answering with a TLS record; over TLS, a server
// that refused the client certificate (with TLS 1.3 the client learns it
// only after its handshake, and it matches distlock.ErrTLS; the other
// cases do not, as a restarting server also closes connections).
func firstReplyError(c *conn, err error) error {
	var op *net.OpError
	switch {
	case c.tls && errors.As(err, &op) && op.Op == "remote error":
		return classed{fmt.Errorf("TLS: refused by the server before its first reply (%w): check the client certificate (Options.TLS Certificates, URL tls_cert and tls_key)", err), distlock.ErrTLS}
	case c.tls:
		return fmt.Errorf("no reply on a new TLS connection (%w): the server may require a client certificate (Options.TLS Certificates, URL tls_cert and tls_key)", err)
	}
	return fmt.Errorf("no reply on a new connection (%w): TLS settings may not match the server; if it serves TLS only, set Options.TLS (URL tls=true)", err)
}

// setupError is the error of a set-up command's error reply se; who names
// the user if it answered AUTH. Only the replies with which Redis refuses
// credentials (see redisauth.Refused: WRONGPASS, NOAUTH, ...) match
// distlock.ErrAccessDenied; any other reply, such as a full server's "ERR
// max number of clients reached" (which lands where the AUTH reply was
// expected), is transient and keeps its text only. No credential is
// quoted: the reply is the server's, which never repeats the password.
func setupError(se resp.Error, who string) error {
	msg := string(se)
	switch {
	case !redisauth.Refused(msg):
		return fmt.Errorf("%w: %s", errSetup, msg)
	case who != "":
		return classed{fmt.Errorf("%w: authentication as %s failed: %s", errSetup, who, msg), distlock.ErrAccessDenied}
	}
	return classed{fmt.Errorf("%w: the server requires authentication (%s): set Options.Username and Password (URL user:password@)", errSetup, msg), distlock.ErrAccessDenied}
}
