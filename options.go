package distlock

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Defaults used when neither the Locker's URL nor the call sets a value.
const (
	// DefaultTTL is the lease time-to-live: 30 s, as Redisson's watchdog
	// lease. Short enough that a crashed holder frees the key soon.
	DefaultTTL = 30 * time.Second

	// MinTTL is the shortest TTL accepted: 10 ms. The validity of a lease
	// is its TTL less a clock drift allowance of TTL x 1% + 2 ms, so a TTL
	// near 2 ms could never yield a lease the caller can use, and a
	// blocking Acquire would retry forever.
	MinTTL = 10 * time.Millisecond

	// DefaultMaxHold caps the total hold time under automatic extension
	// when WithAutoExtend is given 0: one hour.
	DefaultMaxHold = time.Hour

	// DefaultRetryMin and DefaultRetryMax bound the random delay between
	// attempts of a blocking Acquire on backends that poll (a push
	// wake-up usually comes first).
	DefaultRetryMin = 5 * time.Millisecond
	DefaultRetryMax = 50 * time.Millisecond
)

// Options are the per-call settings, resolved from a Locker's defaults and
// the call's Option values. Backends read them; users set them with the
// With* functions.
type Options struct {
	// TTL is how long the lease lives without extension. Default DefaultTTL.
	TTL time.Duration
	// AutoExtend starts a watchdog that extends the lease every TTL/3
	// while it is held, until MaxHold after the acquisition. Default off.
	AutoExtend bool
	// MaxHold caps the total hold time under AutoExtend. Default
	// DefaultMaxHold.
	MaxHold time.Duration
	// RetryMin and RetryMax bound the random delay between attempts of a
	// blocking Acquire. Default DefaultRetryMin and DefaultRetryMax.
	RetryMin, RetryMax time.Duration
	// Label is a value the holder publishes with the lock, for
	// Inspect's LockInfo.Label (a leader's identity, a host name).
	// Default "". Backends that cannot store it ignore it; their package
	// doc says so.
	Label string
}

// DefaultOptions returns the library defaults: TTL DefaultTTL, no
// automatic extension, MaxHold DefaultMaxHold, retry delay between
// DefaultRetryMin and DefaultRetryMax.
func DefaultOptions() Options {
	return Options{TTL: DefaultTTL, MaxHold: DefaultMaxHold, RetryMin: DefaultRetryMin, RetryMax: DefaultRetryMax}
}

// WithDefaults returns o with every zero field set to its default
// (DefaultOptions); backends call it on the Options a user configured.
// AutoExtend stays as given.
func (o Options) WithDefaults() Options {
	d := DefaultOptions()
	if o.TTL == 0 {
		o.TTL = d.TTL
	}
	if o.MaxHold == 0 {
		o.MaxHold = d.MaxHold
	}
	switch {
	case o.RetryMin == 0 && o.RetryMax == 0:
		o.RetryMin, o.RetryMax = d.RetryMin, d.RetryMax
	case o.RetryMax == 0:
		o.RetryMax = max(o.RetryMin, d.RetryMax)
	case o.RetryMin == 0:
		o.RetryMin = min(o.RetryMax, d.RetryMin)
	}
	return o
}

// Option changes one per-call setting. Options are applied in order over
// the Locker's defaults (those of its URL or constructor); a nil Option is
// skipped. An out-of-range result is rejected by the call that receives
// it, with an error matching ErrInvalidArgument.
type Option func(*Options)

// WithTTL sets the lease time-to-live. Without it a call uses the
// Locker's default: DefaultTTL unless the Locker's URL (ttl=10s) or
// constructor set one. ttl <= 0 or below MinTTL is rejected with
// ErrInvalidArgument by the call that receives it.
func WithTTL(ttl time.Duration) Option { return func(o *Options) { o.TTL = ttl } }

// WithAutoExtend turns on the watchdog: the lease is extended every TTL/3
// until it is released, it is known lost (the key is gone or someone
// else's), its validity runs out while extensions keep failing (a failed
// extension is retried at shorter intervals while validity remains), or
// maxHold has passed since the acquisition (then the lease expires and Done
// fires). maxHold 0 keeps the Locker's default: DefaultMaxHold unless the
// Locker's URL set one (autoextend=10m). A negative maxHold is rejected
// with ErrInvalidArgument. Closing the Locker stops the watchdog.
func WithAutoExtend(maxHold time.Duration) Option {
	return func(o *Options) {
		o.AutoExtend = true
		if maxHold != 0 {
			o.MaxHold = maxHold
		}
		if maxHold < 0 {
			o.MaxHold = -1
		}
	}
}

// WithoutAutoExtend turns the watchdog off: the lease lives for its TTL
// unless the caller extends it. It undoes a WithAutoExtend given earlier
// (options apply in order), the Locker's URL default (autoextend=...) and
// Do's default of WithAutoExtend(0). It sets Options.AutoExtend to false
// and leaves MaxHold as it was.
func WithoutAutoExtend() Option { return func(o *Options) { o.AutoExtend = false } }

// WithRetryDelay bounds the random delay between attempts of a blocking
// Acquire. Without it a call uses the Locker's default: DefaultRetryMin
// and DefaultRetryMax unless the Locker's URL (retry_min, retry_max) or
// constructor set them. Backends that are woken by the release itself and
// never poll ignore it. Rejected with ErrInvalidArgument unless
// 0 < min <= max.
func WithRetryDelay(min, max time.Duration) Option {
	return func(o *Options) { o.RetryMin, o.RetryMax = min, max }
}

// MaxLabelLen is the longest Label accepted, in bytes.
const MaxLabelLen = 256

// WithLabel publishes label with the lock where the backend can store it:
// Inspect reports it as LockInfo.Label while the lease is held (package
// leader publishes a candidate's identity this way). It is visible to
// anyone who can inspect the lock space, so it must hold no secret. A
// label longer than MaxLabelLen bytes or not valid UTF-8 is rejected with
// ErrInvalidArgument.
func WithLabel(label string) Option { return func(o *Options) { o.Label = label } }

// Resolve applies opts over base and validates the result. Backends call
// it once per Acquire; the error matches ErrInvalidArgument.
func (base Options) Resolve(opts ...Option) (Options, error) {
	o := base
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o, o.Validate()
}

// Validate reports an error matching ErrInvalidArgument if a setting is
// out of range.
func (o Options) Validate() error {
	switch {
	case o.TTL <= 0:
		return fmt.Errorf("%w: TTL must be > 0, got %v", ErrInvalidArgument, o.TTL)
	case o.TTL < MinTTL:
		return fmt.Errorf("%w: TTL must be at least %v, got %v", ErrInvalidArgument, MinTTL, o.TTL)
	case o.MaxHold <= 0:
		return fmt.Errorf("%w: max hold must be > 0, got %v", ErrInvalidArgument, o.MaxHold)
	case o.RetryMin <= 0 || o.RetryMax < o.RetryMin:
		return fmt.Errorf("%w: retry delay needs 0 < min <= max, got %v..%v", ErrInvalidArgument, o.RetryMin, o.RetryMax)
	}
	return CheckLabel(o.Label)
}

// CheckLabel returns an error matching ErrInvalidArgument for a label
// (WithLabel) longer than MaxLabelLen bytes or not valid UTF-8.
func CheckLabel(label string) error {
	switch {
	case len(label) > MaxLabelLen:
		return fmt.Errorf("%w: label is %d bytes, the limit is %d", ErrInvalidArgument, len(label), MaxLabelLen)
	case !utf8.ValidString(label):
		return fmt.Errorf("%w: label is not valid UTF-8", ErrInvalidArgument)
	}
	return nil
}

// ResolveFor checks key (CheckKey) and resolves opts over base (Resolve):
// the argument checks every backend makes at the top of an acquisition.
// Either failing returns an error matching ErrInvalidArgument.
func (base Options) ResolveFor(key string, opts ...Option) (Options, error) {
	if err := CheckKey(key); err != nil {
		return Options{}, err
	}
	return base.Resolve(opts...)
}

// MaxKeyLen is the longest key, in bytes, any Locker accepts: 4096.
// Every backend honours it after its own encoding (docs/keys.md), so a key
// valid on one backend is valid on every other, as a migration between
// backends needs. Backends may refuse further keys (the Redis backends
// refuse keys naming their own "distlock:" keys); none accepts a longer
// one.
const MaxKeyLen = 4096

// CheckKey returns an error matching ErrInvalidArgument for an empty key
// or one longer than MaxKeyLen bytes. Any other byte string passes: NUL
// bytes, invalid UTF-8 and path syntax included, which every backend
// encodes as a lock of its own (docs/keys.md). It makes no I/O.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: key of %d bytes is longer than distlock.MaxKeyLen (%d bytes); use a shorter key, or a hash of it",
			ErrInvalidArgument, len(key), MaxKeyLen)
	}
	return nil
}
