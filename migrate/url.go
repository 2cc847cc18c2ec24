package migrate

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/distlock/distlock"
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
// returns an error matching distlock.ErrInvalidArgument; an error opening
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
	if err != nil {
		return nil, errors.Join(err, fl.Close(), tl.Close())
	}
	return l, nil
}

func nested(raw string) bool { return strings.HasPrefix(strings.ToLower(raw), "migrate:") }
