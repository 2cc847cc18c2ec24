package etcdlock

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
	// DefaultRequestTimeout bounds one try of a request to one member when
	// Options.RequestTimeout is 0, unless TTL/3 is shorter (then TTL/3). A
	// try that times out is retried, on the next member the client picks,
	// while the call allows: a frozen or cut-off member costs one timeout,
	// not the whole call.
	DefaultRequestTimeout = time.Second

	// DefaultPollInterval is the longest a queued Acquire relies on its
	// watch of the key ahead of it before it reads the queue again (a
	// watch can be stuck on a member that froze or lost its leader).
	DefaultPollInterval = time.Second
)

// Options configure a Locker. A nil *Options, or a zero field, gives the
// default documented on each field.
type Options struct {
	// Lock holds the default per-call options (TTL, auto-extension, retry
	// delay), which the With* options of each call override. Zero fields
	// take the values of distlock.DefaultOptions: TTL 30 s, no
	// auto-extension, max hold 1 h, retry delay 5-50 ms.
	//
	// The TTL is also the TTL of the etcd lease the lock's key is attached
	// to, rounded up to whole seconds (etcd's unit; the server raises it
	// to its minimum, 2 s with the default election timeout). Keep it well
	// above the cluster's election timeout: a lease is only renewed while a
	// leader serves, and the holder declares it lost when its keepalives
	// have failed for a TTL.
	Lock distlock.Options

	// Prefix is prepended to every lock key. The lock of key k is the
	// etcd key prefix Prefix+k+"/", exactly as concurrency.NewMutex(s,
	// Prefix+k) and `etcdctl lock Prefix+k` name it, so that they and
	// this Locker exclude each other; a key containing "/" is a lock of
	// its own, independent of the keys it extends (see the package
	// documentation). At most MaxKeyLen bytes. Default "".
	Prefix string

	// RequestTimeout bounds one try of one request (connecting included);
	// see DefaultRequestTimeout. Per call it is capped at TTL/3, and at
	// TTL/6 for keepalives.
	RequestTimeout time.Duration

	// PollInterval: see DefaultPollInterval.
	PollInterval time.Duration

	// TLS, Username, Password and DialTimeout configure the client Dial
	// makes (see the package documentation, "Connections"); New refuses
	// them, as its client is configured already (clientv3.Config's TLS,
	// Username and Password). TLS is cloned; nil: plaintext. Password,
	// if set, needs Username; String and GoString never print it.
	// DialTimeout bounds the authentication Dial makes; default
	// DefaultDialTimeout.
	TLS                *tls.Config
	Username, Password string
	DialTimeout        time.Duration
}

// String formats o as %+v would, with the password redacted.
func (o Options) String() string {
	type plain Options
	return fmt.Sprintf("%+v", plain(o.redacted()))
}

// GoString formats o as %#v would, with the password redacted.
func (o Options) GoString() string {
	type plain Options
	return strings.Replace(fmt.Sprintf("%#v", plain(o.redacted())), "etcdlock.plain", "etcdlock.Options", 1)
}

// redacted is o with a non-empty password replaced.
func (o Options) redacted() Options {
	if o.Password != "" {
		o.Password = "REDACTED"
	}
	return o
}

// resolve returns o with defaults applied, or an error matching
// distlock.ErrInvalidArgument.
func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	r.Lock = r.Lock.WithDefaults()
	if r.RequestTimeout == 0 {
		r.RequestTimeout = DefaultRequestTimeout
	}
	if r.PollInterval == 0 {
		r.PollInterval = DefaultPollInterval
	}
	if err := r.Lock.Validate(); err != nil {
		return Options{}, err
	}
	switch {
	case r.RequestTimeout < time.Millisecond:
		return Options{}, fmt.Errorf("%w: etcdlock: request timeout must be >= 1ms, got %v", distlock.ErrInvalidArgument, r.RequestTimeout)
	case r.PollInterval < time.Millisecond:
		return Options{}, fmt.Errorf("%w: etcdlock: poll interval must be >= 1ms, got %v", distlock.ErrInvalidArgument, r.PollInterval)
	case len(r.Prefix) > MaxKeyLen:
		return Options{}, fmt.Errorf("%w: etcdlock: prefix of %d bytes is longer than MaxKeyLen (%d bytes)", distlock.ErrInvalidArgument, len(r.Prefix), MaxKeyLen)
	}
	return r, nil
}

// tryTimeout is the timeout of one try of a request for a lock of ttl.
func (o *Options) tryTimeout(ttl time.Duration) time.Duration {
	return max(min(o.RequestTimeout, ttl/3), time.Millisecond)
}

// keepAliveTimeout is the timeout of one keepalive try for a lease of ttl:
// short enough that two tries lost to dead members still leave time for a
// third before the lease's local deadline.
func (o *Options) keepAliveTimeout(ttl time.Duration) time.Duration {
	return max(min(o.RequestTimeout, ttl/6), time.Millisecond)
}

// drift is the clock drift allowance subtracted from every validity: the
// Redlock reference, TTL x 0.01 + 2 ms.
func drift(ttl time.Duration) time.Duration { return validity.DefaultDrift(ttl) }

// leaseSeconds is the etcd lease TTL for a lock TTL: whole seconds, rounded up.
func leaseSeconds(ttl time.Duration) int64 {
	return int64((ttl + time.Second - 1) / time.Second)
}
