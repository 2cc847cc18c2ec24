package redissingle

import (
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// Defaults of Options.
const (
	// DefaultWaitTimeout is how long WAIT blocks for replicas when
	// Options.WaitReplicas > 0 and WaitTimeout is 0.
	DefaultWaitTimeout = 100 * time.Millisecond

	// DefaultPollInterval is the longest a blocked Acquire relies on the
	// push wake-up alone before it asks the server again.
	DefaultPollInterval = 5 * time.Second
)

// Options configure a Locker. The zero value (or a nil *Options) gives the
// defaults documented on each field.
type Options struct {
	// Lock holds the default per-call options (TTL, auto-extension, retry
	// delay), which the With* options of each call override. Zero fields
	// take the values of distlock.DefaultOptions: TTL 30 s, no
	// auto-extension, max hold 1 h, retry delay 5-50 ms (RetryMin and
	// RetryMax are defaulted together, when both are zero). The retry
	// delay paces a blocked Acquire only while push wake-ups are
	// unavailable.
	Lock distlock.Options

	// Prefix is prepended to every key the Locker touches. Default "": the
	// lock of key k is the Redis key k itself, as with a plain SET NX PX;
	// the Locker's own keys live under Prefix + "distlock:". It may not
	// contain "{" or "}" (the Locker places its own Cluster hash tags),
	// nor "distlock:" (see Locker.Acquire).
	Prefix string

	// WaitReplicas, if > 0, makes every acquisition wait (Redis WAIT) until
	// that many replicas have acknowledged the lock. If fewer acknowledge
	// within WaitTimeout, the lock is released and the acquisition fails
	// with a *ReplicationError, which matches distlock.ErrUnavailable (a
	// blocking Acquire keeps trying). This narrows, but does not close,
	// the window in which a failover to a replica loses the lock (WAIT does
	// not make Redis replication synchronous). Default 0: no WAIT. It needs
	// a *redis.Client, a Sentinel failover client or a *redis.ClusterClient.
	WaitReplicas int

	// WaitTimeout bounds each WAIT. Default DefaultWaitTimeout (100 ms).
	// Keep it below the client's ReadTimeout.
	WaitTimeout time.Duration

	// PollInterval is the longest a blocked Acquire waits for the release's
	// push notification before it asks the server again (a safety net;
	// lost notifications after a dropped connection and expired holders
	// are detected sooner). It also sets how long an abandoned wait queue
	// outlives its last waiter: 3 x PollInterval. Default
	// DefaultPollInterval (5 s).
	PollInterval time.Duration

	// AllowEviction lets the Locker use a server that may evict keys when
	// its memory is full (maxmemory set, and a volatile-* or allkeys-*
	// maxmemory-policy), which can drop held locks and the fence counter
	// (see the package documentation). Default false: the Locker reads
	// the server's settings (CONFIG GET maxmemory*) before its first
	// acquisition and, if the server may evict keys, every acquisition
	// fails with an error matching distlock.ErrInvalidArgument that names
	// the policy, until one finds the setting fixed. A server that refuses
	// CONFIG (a managed service, an ACL user without it) is not judged.
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
	if r.WaitTimeout == 0 {
		r.WaitTimeout = DefaultWaitTimeout
	}
	if r.PollInterval == 0 {
		r.PollInterval = DefaultPollInterval
	}
	if err := r.Lock.Validate(); err != nil {
		return Options{}, err
	}
	switch {
	case strings.ContainsAny(r.Prefix, "{}"):
		return Options{}, fmt.Errorf("%w: redissingle: prefix %q may not contain { or }", distlock.ErrInvalidArgument, r.Prefix)
	case strings.Contains(r.Prefix, reserved):
		return Options{}, fmt.Errorf("%w: redissingle: prefix %q may not contain %q (reserved for the Lockers' own keys)", distlock.ErrInvalidArgument, r.Prefix, reserved)
	case r.WaitReplicas < 0:
		return Options{}, fmt.Errorf("%w: redissingle: wait replicas must be >= 0, got %d", distlock.ErrInvalidArgument, r.WaitReplicas)
	case r.WaitTimeout < time.Millisecond:
		return Options{}, fmt.Errorf("%w: redissingle: wait timeout must be >= 1ms, got %v", distlock.ErrInvalidArgument, r.WaitTimeout)
	case r.PollInterval < time.Millisecond:
		return Options{}, fmt.Errorf("%w: redissingle: poll interval must be >= 1ms, got %v", distlock.ErrInvalidArgument, r.PollInterval)
	}
	return r, nil
}
