package migrate

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/lease"
	"github.com/distlock/distlock/internal/urlopt"
)

func init() { distlock.Register("migrate", open) }

// open is the Opener of migrate:// URLs:
//
//	migrate://?from=<URL>&to=<URL>&phase=<from|shadow|both|to>[&shadow_budget=1s][&cleanup_timeout=5s]
//
// from and to are Locker URLs, query-escaped (url.QueryEscape) so that
// their own parameters stay theirs; they are opened with distlock.Open,
// so their backends must be registered. A missing or equal from/to, a
// nested migrate URL, a host or path, an unknown parameter or phase
// returns an error matching distlock.ErrInvalidArgument, and so do from
// and to naming one lock space twice in phases shadow and both (checked
// by holding a random key on from and trying it on to); an error opening
// either Locker is returned as is (the other is closed).
func open(ctx context.Context, u *url.URL) (distlock.Locker, error) {
	if u.Host != "" || (u.Path != "" && u.Path != "/") || u.User != nil {
		return nil, invalid("a migrate URL takes only query parameters (migrate://?from=...&to=...&phase=...)")
	}
	p := urlopt.New(u)
	from, to, phase := p.String("from", ""), p.String("to", ""), p.String("phase", "")
	opts := Options{
		ShadowBudget:   p.Duration("shadow_budget", 0),
		CleanupTimeout: p.Duration("cleanup_timeout", 0),
	}
	if err := p.Done(); err != nil {
		return nil, err
	}
	switch {
	case from == "" || to == "":
		return nil, invalid("the URL needs both from=<escaped URL> and to=<escaped URL>")
	case from == to:
		return nil, invalid("from and to are the same URL: give the backend the fleet leaves and the one it moves to")
	case nested(from) || nested(to):
		return nil, invalid("from and to cannot be migrate URLs themselves")
	case phase == "":
		return nil, invalid("the URL needs phase=from, shadow, both or to")
	}
	var err error
	if opts.Phase, err = ParsePhase(phase); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	fl, err := distlock.Open(ctx, from)
	if err != nil {
		return nil, err
	}
	tl, err := distlock.Open(ctx, to)
	if err != nil {
		return nil, errors.Join(err, fl.Close())
	}
	l, err := New(fl, tl, opts)
	if err == nil && (opts.Phase == PhaseShadow || opts.Phase == PhaseBoth) {
		err = distinct(ctx, fl, tl)
	}
	if err != nil {
		if cerr := errors.Join(fl.Close(), tl.Close()); cerr != nil {
			return nil, fmt.Errorf("%w (closing: %v)", err, strings.ReplaceAll(cerr.Error(), "\n", "; "))
		}
		return nil, err
	}
	return l, nil
}

// distinct checks that from and to are two lock spaces, not one named
// twice (mem://x and mem://x/, redis://h and redis://h:6379/0): phase
// both would then wait for itself. It holds a random key on from and
// tries it on to; a refusal means they share it. An unreachable backend
// proves nothing and is not an error here.
func distinct(ctx context.Context, from, to distlock.Locker) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	key := "distlock-migrate-probe/" + lease.NewToken()
	a, err := from.TryAcquire(ctx, key, distlock.WithTTL(probeTimeout))
	if err != nil {
		return nil
	}
	defer a.Release(ctx)
	b, err := to.TryAcquire(ctx, key, distlock.WithTTL(probeTimeout))
	if errors.Is(err, distlock.ErrNotAcquired) && !errors.Is(err, distlock.ErrUnavailable) && ctx.Err() == nil {
		return invalid("from and to name the same lock space (a key held on from is held on to): give two different backends")
	}
	if err == nil {
		_ = b.Release(ctx)
	}
	return nil
}

// probeTimeout bounds distinct.
const probeTimeout = 5 * time.Second

func nested(raw string) bool { return strings.HasPrefix(strings.ToLower(raw), "migrate:") }
