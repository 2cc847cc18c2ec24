package etcdlock

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distlock/distlock"
)

// The etcd client reports a connection it cannot make only as a request
// that timed out ("context deadline exceeded"): gRPC keeps retrying the
// connection and the client drops gRPC's description of why. Until a
// Locker's first request succeeds, a request that times out or finds no
// connection is followed by a diagnosis: one short probe per endpoint,
// speaking TLS or plaintext HTTP/2 as the client does, which recognizes
// TLS settings that do not match the server's (see distlock.ErrTLS).
// Once a request has succeeded, the settings work and failures are the
// cluster's.

// diagnoseTimeout bounds a whole diagnosis.
const diagnoseTimeout = 2 * time.Second

// http2Preface is a client's HTTP/2 connection preface and an empty
// SETTINGS frame; a gRPC server answers with a SETTINGS frame.
var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")

// connectionFailed reports whether err is a request's failure to reach a
// server (a try that timed out, or no connection), which diagnose may
// explain.
func connectionFailed(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if s, ok := status.FromError(err); ok {
		return s.Code() == codes.DeadlineExceeded || s.Code() == codes.Unavailable
	}
	return false
}

// diagnose probes endpoints with the client's TLS configuration cfg (nil:
// plaintext, unless the endpoint is an https URL) within ctx and
// diagnoseTimeout, and returns an error matching distlock.ErrTLS for the first
// mismatch it recognizes, or nil.
func diagnose(ctx context.Context, endpoints []string, cfg *tls.Config) error {
	if ctx.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, diagnoseTimeout)
	defer cancel()
	for _, ep := range endpoints {
		addr, secure := ep, cfg != nil
		switch {
		case strings.HasPrefix(ep, "https://"), strings.HasPrefix(ep, "unixs://"):
			addr, secure = ep[strings.Index(ep, "://")+3:], true
		case strings.HasPrefix(ep, "http://"):
			addr = ep[len("http://"):]
		case strings.Contains(ep, "://"):
			continue // unix sockets and other schemes: not probed
		}
		var err error
		if secure {
			err = probeTLS(ctx, addr, cfg)
		} else {
			err = probePlain(ctx, addr)
		}
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
	return nil
}

// probeTLS makes a TLS connection to addr as the client would and sends
// the HTTP/2 preface.
func probeTLS(ctx context.Context, addr string, cfg *tls.Config) error {
	c := &tls.Config{}
	if cfg != nil {
		c = cfg.Clone()
	}
	if c.ServerName == "" {
		if h, _, err := net.SplitHostPort(addr); err == nil {
			c.ServerName = h
		}
	}
	d := tls.Dialer{Config: c}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var cv *tls.CertificateVerificationError
		var rh tls.RecordHeaderError
		msg := err.Error()
		switch {
		case errors.As(err, &cv), strings.Contains(msg, "x509:"):
			return fmt.Errorf("%w: etcdlock: server certificate rejected (check the CA the client trusts and the host name the certificate names): %v", distlock.ErrTLS, err)
		case errors.As(err, &rh):
			return fmt.Errorf("%w: etcdlock: the server does not speak TLS: TLS settings may not match the server (drop TLS, or serve https client URLs)", distlock.ErrTLS)
		case strings.Contains(msg, "remote error: tls:"):
			return fmt.Errorf("%w: etcdlock: the server refused the TLS handshake (a client certificate it requires or trusts?): %v", distlock.ErrTLS, err)
		case errors.Is(err, io.EOF) || strings.Contains(msg, "connection reset"):
			// Closed during the handshake: a plaintext server does that.
			if answersPlainGRPC(ctx, addr) {
				return fmt.Errorf("%w: etcdlock: the server does not speak TLS: TLS settings may not match the server (drop TLS, or serve https client URLs)", distlock.ErrTLS)
			}
		}
		return nil
	}
	defer conn.Close()
	_, err = exchangePreface(ctx, conn)
	if err != nil && strings.Contains(err.Error(), "remote error: tls:") {
		return fmt.Errorf("%w: etcdlock: the server refused the TLS handshake (a client certificate it requires or trusts?): %v", distlock.ErrTLS, err)
	}
	return nil
}

// probePlain sends the HTTP/2 preface in plaintext to addr; a server that
// answers with TLS, or closes the connection but completes a TLS
// handshake, wants TLS.
func probePlain(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	reply, err := exchangePreface(ctx, conn)
	_ = conn.Close()
	wantsTLS := fmt.Errorf("%w: etcdlock: the server did not answer as plaintext gRPC and speaks TLS: TLS settings may not match the server (set TLS, or tls_ca in the URL)", distlock.ErrTLS)
	switch {
	case len(reply) >= 9 && reply[3] == 0x4: // a SETTINGS frame: plaintext gRPC
		return nil
	case len(reply) >= 3 && (reply[0] == 0x15 || reply[0] == 0x16) && reply[1] == 0x3, // a TLS record
		bytes.HasPrefix(reply, []byte("HTTP/1.")) && bytes.Contains(reply, []byte("HTTPS")):
		return wantsTLS
	case len(reply) == 0 && err != nil && !isTimeout(err):
		td := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} // only asks whether it speaks TLS
		c, err := td.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		if err == nil || strings.Contains(err.Error(), "remote error: tls:") {
			return wantsTLS
		}
	}
	return nil
}

// exchangePreface writes the HTTP/2 preface on conn and returns the first
// bytes of the reply (until ctx ends), with the read's error.
func exchangePreface(ctx context.Context, conn net.Conn) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write(http2Preface); err != nil {
		return nil, err
	}
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(conn, buf, 9)
	return buf[:n], err
}

// answersPlainGRPC reports whether addr answers the plaintext HTTP/2
// preface with a SETTINGS frame.
func answersPlainGRPC(ctx context.Context, addr string) bool {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	reply, _ := exchangePreface(ctx, conn)
	return len(reply) >= 9 && reply[3] == 0x4
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
