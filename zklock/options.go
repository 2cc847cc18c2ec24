package zklock

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
)

// Defaults of Options.
const (
	// DefaultSafeFraction is the part of the session timeout a lease may
	// count on after the start of the last request that confirmed it
	// through the leader (see the package documentation). The leader
	// expires a session a full timeout after it last heard of it, but a
	// follower relays that a session is alive to the leader only on its
	// next tick, and the client pings every third of the timeout: if the
	// follower dies or is cut off in between, the leader's last word can
	// be a third of the timeout (plus a tick) older than that request.
	// A lease therefore counts on at most 2/3 of the timeout minus half a
	// tick (see Options.TickTime) and the clock drift, and at most
	// SafeFraction of it: 0.6 leaves a margin for timeouts long against
	// the tick.
	DefaultSafeFraction = 0.6

	// DefaultTickTime is ZooKeeper's default tickTime.
	DefaultTickTime = 2 * time.Second

	// DefaultConnectTimeout bounds how long TryAcquire (and any call
	// whose context has no deadline) waits for a session to be
	// established before it fails with distlock.ErrUnavailable.
	DefaultConnectTimeout = 3 * time.Second

	// DefaultMaxSessions caps the sessions one Locker opens (one per
	// distinct TTL when Options.SessionTimeout is 0).
	DefaultMaxSessions = 8
)

// Options configure a Locker. A nil *Options, or a zero field, gives the
// default documented on each field.
type Options struct {
	// Lock holds the default per-call options (TTL, auto-extension, retry
	// delay), which the With* options of each call override. Zero fields
	// take the values of distlock.DefaultOptions: TTL 30 s, no
	// auto-extension, max hold 1 h, retry delay 5-50 ms (used between
	// attempts after a connection error; waiting for the key itself is
	// pushed by watches).
	Lock distlock.Options

	// Prefix is the ZooKeeper path under which lock nodes live (see the
	// package documentation): absolute, at most MaxPrefixLen bytes, valid
	// UTF-8 without the characters ZooKeeper refuses in paths (control
	// characters, U+007F-U+009F, U+D800-U+F8FF, U+FFF0 and above).
	// Default DefaultPrefix ("/distlock").
	Prefix string

	// SessionTimeout, if set, is the timeout of the one session that
	// every call uses, whatever its TTL; a lease then lasts
	// min(TTL, SafeFraction x the negotiated timeout) from its last
	// confirmation. Default 0: each distinct TTL gets its own session
	// whose timeout is that TTL (see the package documentation).
	SessionTimeout time.Duration

	// SafeFraction: a lease's validity ends at most SafeFraction x the
	// negotiated session timeout after the start of the last request that
	// confirmed it (capped by its TTL, and by 2/3 x timeout - TickTime/2 -
	// drift). Must be in (0, 2/3). Default DefaultSafeFraction.
	SafeFraction float64

	// TickTime is the ensemble's tickTime (zoo.cfg), or an upper bound of
	// it: a server relays a session's activity to the leader only on a
	// tick, so each lease's validity gives up half a tick. A session
	// timeout too short for it (2/3 x timeout <= TickTime/2 + drift)
	// makes acquisitions fail with distlock.ErrInvalidArgument. Default
	// DefaultTickTime (2 s).
	TickTime time.Duration

	// ConnectTimeout bounds the wait for a session where the call's
	// context does not (TryAcquire always; Acquire without a deadline
	// keeps waiting). Default DefaultConnectTimeout.
	ConnectTimeout time.Duration

	// MaxSessions caps the number of sessions (distinct TTLs) the Locker
	// opens; an acquisition that would need one more fails with
	// distlock.ErrInvalidArgument. Default DefaultMaxSessions.
	MaxSessions int

	// Username and Password, if set, are digest credentials: every
	// session sends them (AddAuth "digest", "user:password") before its
	// first request and again on every reconnection and new session.
	// Username may not contain ':'; a Password needs a Username. ZooKeeper
	// accepts any digest credentials: a wrong password shows only as a
	// node whose ACL refuses the user (see the package documentation).
	// Default: none.
	Username, Password string

	// ACL is put on every node the Locker creates (lock nodes and the
	// container nodes above them, up to the prefix). Default, with
	// Username: DefaultACL(Username, Password), all permissions to that
	// user and read to everyone; without: zk.WorldACL(zk.PermAll).
	ACL []zk.ACL

	// TLS, if set, is the client configuration of TLS connections to the
	// servers' secureClientPort; nil: plaintext. The Locker uses a clone;
	// without a ServerName each server's host name is verified.
	TLS *tls.Config

	// Logger receives go-zookeeper's log lines (connection errors,
	// reconnects). Default: discarded.
	Logger zk.Logger
}

// discard is the default Logger.
type discard struct{}

func (discard) Printf(string, ...any) {}

// resolve returns o with defaults applied, or an error matching
// distlock.ErrInvalidArgument.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	r.Lock = r.Lock.WithDefaults()
	if err := r.Lock.Validate(); err != nil {
		return Options{}, err
	}
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: zklock: "+format, append([]any{distlock.ErrInvalidArgument}, args...)...)
	}
	p, err := checkPrefix(r.Prefix)
	if err != nil {
		return Options{}, err
	}
	r.Prefix = p
	if r.SafeFraction == 0 {
		r.SafeFraction = DefaultSafeFraction
	}
	if r.ConnectTimeout == 0 {
		r.ConnectTimeout = DefaultConnectTimeout
	}
	if r.TickTime == 0 {
		r.TickTime = DefaultTickTime
	}
	if r.MaxSessions == 0 {
		r.MaxSessions = DefaultMaxSessions
	}
	switch {
	case strings.Contains(r.Username, ":"):
		return bad("username %q contains ':', which a digest identity cannot carry", r.Username)
	case r.Username == "" && r.Password != "":
		return bad("a password needs a username")
	}
	if r.ACL == nil && r.Username != "" {
		r.ACL = DefaultACL(r.Username, r.Password)
	}
	if r.ACL == nil {
		r.ACL = zk.WorldACL(zk.PermAll)
	}
	if r.TLS != nil {
		r.TLS = r.TLS.Clone()
	}
	if r.Logger == nil {
		r.Logger = discard{}
	}
	switch {
	case r.SessionTimeout < 0:
		return bad("session timeout must be >= 0, got %v", r.SessionTimeout)
	case r.SafeFraction <= 0 || r.SafeFraction >= 2.0/3:
		return bad("safe fraction must be in (0, 2/3), got %v", r.SafeFraction)
	case r.TickTime < 0:
		return bad("tick time must be >= 0, got %v", r.TickTime)
	case r.ConnectTimeout < 0:
		return bad("connect timeout must be >= 0, got %v", r.ConnectTimeout)
	case r.MaxSessions < 0:
		return bad("max sessions must be >= 1, got %d", r.MaxSessions)
	}
	return r, nil
}

// String describes the options without the password.
func (o Options) String() string {
	return fmt.Sprintf("%+v", o.redacted())
}

// GoString is String: %#v never prints the password.
func (o Options) GoString() string { return o.String() }

// redacted is o with the password masked and the ACLs' digests (which
// hash the password) left out.
func (o Options) redacted() any {
	type plain Options // no String method: no recursion
	r := plain(o)
	if r.Password != "" {
		r.Password = "xxxxx"
	}
	r.ACL = nil
	acl := make([]string, len(o.ACL))
	for i, a := range o.ACL {
		id := a.ID
		if a.Scheme == "digest" {
			id, _, _ = strings.Cut(id, ":")
		}
		acl[i] = fmt.Sprintf("%s:%s:%d", a.Scheme, id, a.Perms)
	}
	return struct {
		plain
		ACLs []string
	}{r, acl}
}
