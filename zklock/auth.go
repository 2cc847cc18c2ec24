package zklock

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
)

// DefaultACL is the ACL a Locker with credentials puts on the nodes it
// creates: every permission to the digest user (zk.DigestACL: the server
// keeps the user and a SHA-1 of "user:password"), and read to everyone,
// so that operators and other users can see who holds a lock (Inspect,
// zkCli get/ls) but not delete, change or create lock nodes.
func DefaultACL(username, password string) []zk.ACL {
	return append(zk.DigestACL(zk.PermAll, username, password), zk.WorldACL(zk.PermRead)...)
}

// authError is a request refused for want of authorization, a node's ACL
// (ZooKeeper's NoAuth) or the server refusing the credentials
// (AuthFailed, or no credentials where the server requires them): it
// names the user (never the password) and what to check, and matches
// distlock.ErrAccessDenied (and so distlock.ErrUnavailable).
type authError struct {
	user string
	err  error // zk.ErrNoAuth, zk.ErrAuthFailed or the server's error
}

func (e *authError) Error() string {
	switch {
	case errors.Is(e.err, zk.ErrAuthFailed):
		return fmt.Sprintf("ZooKeeper authentication failed for digest user %q: %v", e.user, e.err)
	case e.user == "":
		return fmt.Sprintf("not authorized without credentials (set Options.Username and Password, or the URL's user:password): %v", e.err)
	default:
		return fmt.Sprintf("not authorized as digest user %q: wrong password, or a node's ACL does not grant this user (another user created it): %v", e.user, e.err)
	}
}

func (e *authError) Unwrap() []error {
	return []error{distlock.ErrAccessDenied, e.err}
}

// errSessionRequiresAuth is how go-zookeeper reports ZooKeeper's
// SESSIONCLOSEDREQUIRESASLAUTH (-124), the reply of a server with
// enforce.auth.enabled to a session that has not authenticated: it has
// no error value for the code and reports it by number.
const errSessionRequiresAuth = "unknown error: -124"

// refused returns err as an *authError if it is an authorization
// failure, else err. Once a server has required authentication of a
// Locker without credentials, a lost connection or a missing server is
// reported as such a failure too (the server closes the session after the
// refusal), until a request succeeds (err == nil): from then on they are
// outages again, such as a server restarting without enforcing
// authentication.
func (l *Locker) refused(err error) error {
	if err == nil {
		l.needAuth.Store(false)
		return nil
	}
	var ae *authError
	if errors.As(err, &ae) {
		return err
	}
	if isRequiresAuth(err) {
		l.needAuth.Store(true)
	}
	if errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) || isRequiresAuth(err) {
		return &authError{user: l.opts.Username, err: err}
	}
	if l.needAuth.Load() && l.opts.Username == "" && (errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)) {
		// The server closes the session of a refused request.
		return &authError{err: fmt.Errorf("%w after the server required authentication", err)}
	}
	return err
}

func isRequiresAuth(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == errSessionRequiresAuth {
			return true
		}
	}
	return false
}

// authenticate sends the session's digest credentials. go-zookeeper keeps
// credentials once the server has accepted them and sends them again
// first on every reconnection (before any queued request); until then,
// each connection's failure makes it try again. It runs on its own
// goroutine, started by newSession; ready waits for it, so no request of
// the Locker's goes out before the credentials.
func (s *session) authenticate() {
	defer close(s.authDone)
	auth := []byte(s.l.opts.Username + ":" + s.l.opts.Password)
	for {
		err := s.conn.AddAuth("digest", auth)
		switch {
		case err == nil:
			return
		case errors.Is(err, zk.ErrClosing) || s.isClosing():
			s.setAuthErr(distlock.ErrClosed)
			return
		case transient(err):
			// The connection went before the reply: try again on the next.
			select {
			case <-s.closing:
				s.setAuthErr(distlock.ErrClosed)
				return
			case <-time.After(10 * time.Millisecond):
			}
		default:
			s.setAuthErr(fmt.Errorf("zklock: add auth: %w", s.l.refused(err)))
			return
		}
	}
}

func (s *session) setAuthErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authErr = err
}

func (s *session) isClosing() bool { return isClosed(s.closing) }

// String describes the Locker: its servers and options, without the
// password.
func (l *Locker) String() string {
	return fmt.Sprintf("zklock.Locker{Servers:%v Options:%v}", l.servers, l.opts)
}

// GoString is String: %#v never prints the password.
func (l *Locker) GoString() string { return l.String() }
