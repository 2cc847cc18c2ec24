package leader

import (
	"fmt"
	"time"

	"github.com/distlock/distlock"
)

// Defaults of a Candidate's settings.
const (
	// DefaultBackoffMin and DefaultBackoffMax bound the delay before a
	// Candidate campaigns again after a term ended (the work returned or
	// leadership was lost) or a campaign failed: 500 ms, doubling after
	// each consecutive end up to 30 s, jittered (see WithBackoff).
	DefaultBackoffMin = 500 * time.Millisecond
	DefaultBackoffMax = 30 * time.Second

	// DefaultResignDelay is how long a Candidate that resigned waits
	// before it campaigns again: 5 s, time enough for a waiting candidate
	// to take over.
	DefaultResignDelay = 5 * time.Second
)

// unlimitedTerm is the watchdog's MaxHold when WithMaxTerm is not given:
// a term lasts until the lease is lost, the work returns or the Candidate
// resigns.
const unlimitedTerm = 100 * 365 * 24 * time.Hour

// config is a Candidate's resolved settings.
type config struct {
	backoffMin, backoffMax time.Duration
	resignDelay            time.Duration
	maxTerm                time.Duration
	observer               func(Event)
	lockOpts               []distlock.Option
	identity               string
}

// Option changes one setting of a Candidate (NewCandidate). A nil Option
// is skipped.
type Option func(*config)

// WithBackoff bounds the delay before campaigning again after a term
// ended or a campaign failed (a backend error other than ErrClosed or
// ErrInvalidArgument). The delay starts at min and doubles after each
// consecutive end, up to max; each wait is drawn at random from the upper
// half of the current delay. A term that lasted at least max resets it to
// min. Defaults DefaultBackoffMin and DefaultBackoffMax. NewCandidate
// rejects it with distlock.ErrInvalidArgument unless 0 < min <= max.
func WithBackoff(min, max time.Duration) Option {
	return func(c *config) { c.backoffMin, c.backoffMax = min, max }
}

// WithResignDelay sets how long a Candidate waits after Resign before it
// campaigns again (0: at once, which with other candidates waiting still
// hands leadership over on backends that wake waiters in order). Default
// DefaultResignDelay. A negative d is rejected by NewCandidate with
// distlock.ErrInvalidArgument. To stop campaigning, end Run's context.
func WithResignDelay(d time.Duration) Option {
	return func(c *config) { c.resignDelay = d }
}

// WithMaxTerm caps a term: the watchdog stops extending the lease d after
// it was acquired, the lease runs out, the work's context is cancelled
// (the cause matches distlock.ErrLeaseLost) and the Candidate campaigns
// again, so leadership can move. Default: no cap. d <= 0 is rejected by
// NewCandidate with distlock.ErrInvalidArgument.
func WithMaxTerm(d time.Duration) Option {
	return func(c *config) { c.maxTerm = d }
}

// WithObserver has f told of each leadership change of the Candidate
// (Elected, then one of Lost, Resigned, SteppedDown per term). Calls are
// made one at a time, in order, from Run's goroutine or from the goroutine
// that watches the term; the work starts after f returns for Elected, so
// f must return quickly (to feed a channel, send without blocking). nil f
// reports nothing, as without the option.
func WithObserver(f func(Event)) Option {
	return func(c *config) { c.observer = f }
}

// WithLockOptions passes opts to each acquisition of the election key,
// after the Candidate's own (the watchdog on, up to the maximum term):
// distlock.WithTTL sets how soon a crashed leader's lease expires, so how
// soon another candidate takes over; distlock.WithRetryDelay paces the
// campaign on backends that poll. distlock.WithoutAutoExtend would end
// every term after one TTL.
func WithLockOptions(opts ...distlock.Option) Option {
	return func(c *config) { c.lockOpts = append(c.lockOpts, opts...) }
}

// WithIdentity publishes id (an address, a host name) with the election
// key while this Candidate leads, so that other processes find the leader
// with Observe. It is distlock.WithLabel on each acquisition: backends
// that store labels report it (see each backend's Inspection section),
// the others ignore it. id must hold no secret; NewCandidate rejects one
// longer than distlock.MaxLabelLen bytes or not valid UTF-8 with
// distlock.ErrInvalidArgument.
func WithIdentity(id string) Option {
	return func(c *config) { c.identity = id }
}

// resolve applies opts over the defaults and validates the result.
func resolve(opts []Option) (config, error) {
	c := config{
		backoffMin:  DefaultBackoffMin,
		backoffMax:  DefaultBackoffMax,
		resignDelay: DefaultResignDelay,
		maxTerm:     unlimitedTerm,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch {
	case c.backoffMin <= 0 || c.backoffMax < c.backoffMin:
		return c, fmt.Errorf("%w: leader: backoff needs 0 < min <= max, got %v..%v", distlock.ErrInvalidArgument, c.backoffMin, c.backoffMax)
	case c.resignDelay < 0:
		return c, fmt.Errorf("%w: leader: resign delay must be >= 0, got %v", distlock.ErrInvalidArgument, c.resignDelay)
	case c.maxTerm <= 0:
		return c, fmt.Errorf("%w: leader: max term must be > 0, got %v", distlock.ErrInvalidArgument, c.maxTerm)
	}
	if err := distlock.CheckLabel(c.identity); err != nil {
		return c, fmt.Errorf("leader: identity: %w", err)
	}
	c.lockOpts = append([]distlock.Option{distlock.WithAutoExtend(c.maxTerm), distlock.WithLabel(c.identity)}, c.lockOpts...)
	return c, nil
}
