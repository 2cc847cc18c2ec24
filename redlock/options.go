package redlock

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/validity"
)

// Defaults of Options.
const (
	// DefaultNodeTimeout is the longest an operation waits for one node's
	// reply (connection included) when Options.NodeTimeout is 0, unless
	// TTL/10 is shorter: then TTL/10. It is small against the TTL, as the
	// validity computation needs, and large enough that a loaded host
	// does not count a live node as down.
	DefaultNodeTimeout = 50 * time.Millisecond

	// DefaultDialTimeout bounds the connecting of a new connection.
	// Within an operation the node timeout bounds it too.
	DefaultDialTimeout = time.Second

	// DefaultPollInterval is the longest a blocked Acquire relies on the
	// push wake-up before it tries again.
	DefaultPollInterval = time.Second
)

// Options configure a Locker. A nil *Options, or a zero field, gives the
// default documented on each field.
type Options struct {
	// Lock holds the default per-call options (TTL, auto-extension, retry
	// delay), which the With* options of each call override. Zero fields
	// take the values of distlock.DefaultOptions: TTL 30 s, no
	// auto-extension, max hold 1 h, retry delay 5-50 ms (RetryMin and
	// RetryMax are defaulted together, when both are zero).
	Lock distlock.Options

	// NodeTimeout bounds each node's part of an operation: connecting (if
	// no pooled connection is idle), sending and the reply. A node that
	// does not answer in time counts as failed for that operation, so a
	// dead or frozen node costs at most NodeTimeout. It must stay small
	// against the TTL. Default: min(DefaultNodeTimeout, TTL/10), per call.
	NodeTimeout time.Duration

	// DriftFactor and DriftFixed give the clock drift allowance subtracted
	// from every validity: TTL x DriftFactor + DriftFixed. Defaults: the
	// Redlock reference 0.01 and 2 ms, applied together when both are
	// zero; otherwise both are used as given (DriftFactor 0 with DriftFixed
	// 5 ms is a fixed 5 ms). DriftFactor must be in [0, 1), DriftFixed >= 0.
	DriftFactor float64
	DriftFixed  time.Duration

	// DialTimeout bounds the connecting of a new connection, TLS
	// handshake included, and the subscription of a pub/sub one. The
	// set-up (AUTH, SELECT, SCRIPT LOAD) goes out with the connection's
	// first request and is bounded with it. Within an operation the node
	// timeout bounds all of it too. Default DefaultDialTimeout (1 s).
	DialTimeout time.Duration

	// Username and Password, if Password is set, authenticate every
	// connection: AUTH Username Password (an ACL user, Redis 6 or later),
	// or AUTH Password (the default user, requirepass) when Username is
	// "". DB selects a database (default 0). All nodes share them. A
	// failed AUTH makes the node unavailable for the operation (see
	// Connections in the package documentation). String and GoString
	// never print Password.
	Username, Password string
	DB                 int

	// TLS, if not nil, makes every connection TLS with this configuration,
	// verified as crypto/tls does: against RootCAs (nil: the system's
	// roots) and ServerName, which, when empty, is each node's host (so
	// one configuration serves nodes with different names); set
	// InsecureSkipVerify only for tests. Client certificates go in
	// Certificates. New clones it. Default nil: plaintext.
	TLS *tls.Config

	// NodeTLS, if set, gives each node its own TLS configuration instead
	// of TLS: New calls it once per address as given to New, and a nil
	// result makes that node plaintext. The result is cloned and an empty
	// ServerName is the node's host, as for TLS.
	NodeTLS func(addr string) *tls.Config

	// Prefix is prepended to every key the Locker touches. Default "": the
	// lock of key k is the Redis key k itself, so that other Redlock
	// clients (redsync, ...) contending on k exclude and are excluded by
	// this Locker. The Locker's own keys (fence counter, wait queues) live
	// under Prefix + "distlock:". A Prefix containing "distlock:" is
	// refused (distlock.ErrInvalidArgument), as are keys whose Prefix +
	// key contains it (see MaxKeyLen for the length limit).
	Prefix string

	// PollInterval is the longest a blocked Acquire waits for the push
	// wake-up of a release before it tries again (it also tries again when
	// the holder's TTL runs out). Default DefaultPollInterval (1 s).
	PollInterval time.Duration

	// AllowEviction lets the Locker use nodes that may evict keys when
	// their memory is full (a maxmemory limit with a policy other than
	// noeviction), which can delete a held lock or a fence counter.
	// Default false: an acquisition reads each node's settings once
	// (CONFIG GET maxmemory*) and fails with an error matching
	// distlock.ErrInvalidArgument while a node may evict. A node that
	// refuses CONFIG is not judged.
	AllowEviction bool
}

// resolve returns o with defaults applied, or an error matching
// distlock.ErrInvalidArgument.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	r.Lock = r.Lock.WithDefaults()
	if r.DriftFactor == 0 && r.DriftFixed == 0 {
		r.DriftFactor, r.DriftFixed = validity.DefaultDriftFactor, validity.DefaultDriftFixed
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = DefaultDialTimeout
	}
	if r.PollInterval == 0 {
		r.PollInterval = DefaultPollInterval
	}
	if err := r.Lock.Validate(); err != nil {
		return Options{}, err
	}
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: redlock: "+format, append([]any{distlock.ErrInvalidArgument}, args...)...)
	}
	switch {
	case r.NodeTimeout < 0:
		return bad("node timeout must be >= 0, got %v", r.NodeTimeout)
	case r.DriftFactor < 0 || r.DriftFactor >= 1:
		return bad("drift factor must be in [0, 1), got %v", r.DriftFactor)
	case r.DriftFixed < 0:
		return bad("drift fixed must be >= 0, got %v", r.DriftFixed)
	case r.DialTimeout < 0:
		return bad("dial timeout must be >= 0, got %v", r.DialTimeout)
	case r.PollInterval < time.Millisecond:
		return bad("poll interval must be >= 1ms, got %v", r.PollInterval)
	case r.DB < 0:
		return bad("DB must be >= 0, got %d", r.DB)
	case strings.Contains(r.Prefix, reserved):
		return bad("prefix %q contains %q, which is reserved for the Locker's own keys", r.Prefix, reserved)
	}
	return r, nil
}

// nodeTimeout is the per-node timeout of an operation on a lease of ttl.
func (o *Options) nodeTimeout(ttl time.Duration) time.Duration {
	if o.NodeTimeout > 0 {
		return o.NodeTimeout
	}
	return max(min(DefaultNodeTimeout, ttl/10), time.Millisecond)
}

// drift is the clock drift allowance for ttl.
func (o *Options) drift(ttl time.Duration) time.Duration {
	return validity.Drift(ttl, o.DriftFactor, o.DriftFixed)
}
