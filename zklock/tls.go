package zklock

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// errNoHandshake is the last connection's fate when the server closed it
// before answering the session handshake, as a TLS-only port does to a
// plaintext client.
var errNoHandshake = errors.New("the server closed the connection before the session handshake")

// handshake runs the TLS handshake on c within timeout, verifying the
// host of addr when cfg has no ServerName. It closes c on failure.
func handshake(c net.Conn, addr string, cfg *tls.Config, timeout time.Duration) (net.Conn, error) {
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	_ = tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// setDialErr records why the last connection attempt failed (nil: it
// was made).
func (s *session) setDialErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialErr = err
}

// dialHint is appended to the error of a wait for a session that did not
// come: the last connection's failure, with a hint when TLS settings may
// not match the server's.
func (s *session) dialHint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.dialErr == nil:
		return ""
	case errors.Is(s.dialErr, errNoHandshake) && s.tls == nil:
		return fmt.Sprintf(" (last connection: %v; TLS settings may not match the server's: is it a TLS port?)", s.dialErr)
	case s.tls != nil:
		var cv *tls.CertificateVerificationError
		if errors.As(s.dialErr, &cv) {
			return fmt.Sprintf(" (last connection: %v)", s.dialErr)
		}
		return fmt.Sprintf(" (last connection: %v; TLS settings may not match the server's: does it serve TLS on this port?)", s.dialErr)
	default:
		return fmt.Sprintf(" (last connection: %v)", s.dialErr)
	}
}
