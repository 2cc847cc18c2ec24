package pgadvisory

import (
	"context"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

// params are the query parameters the Locker reads itself; the others go
// to pgx.ParseConfig (libpq keywords; unknown ones become server settings
// sent at connection time, which the server rejects if it does not know
// them).
var params = []string{"ttl", "autoextend", "retry_min", "retry_max", "mode", "namespace", "fence_sequence", "max_idle", "conn_check_interval", "request_timeout"}

func init() {
	distlock.Register("postgres", open)
	distlock.Register("postgresql", open)
}

// open is the Opener of "postgres://" and "postgresql://" URLs. It does
// no I/O. TLS and credentials are pgx's: the userinfo, sslmode,
// sslrootcert, sslcert, sslkey (the shared tls_ parameters are refused,
// naming these).
func open(_ context.Context, u *url.URL) (distlock.Locker, error) {
	ours, rest := urlopt.Split(u, params)
	p := urlopt.New(ours)
	opts := Options{
		Lock:              p.LockOptions(),
		Namespace:         p.String("namespace", DefaultNamespace),
		FenceSequence:     p.String("fence_sequence", DefaultFenceSequence),
		MaxIdle:           p.Int("max_idle", DefaultMaxIdle),
		ConnCheckInterval: p.Duration("conn_check_interval", DefaultConnCheckInterval),
		RequestTimeout:    p.Duration("request_timeout", DefaultRequestTimeout),
	}
	mode, merr := ParseMode(p.String("mode", "session"))
	if err := p.Done(); err != nil {
		return nil, err
	}
	if merr != nil {
		return nil, merr
	}
	opts.Mode = mode
	q := rest.Query()
	for _, name := range urlopt.TLSParams {
		if q.Has(name) {
			return nil, fmt.Errorf("%w: pgadvisory: %s: Postgres URLs configure TLS with pgx's (libpq's) parameters sslmode, sslrootcert, sslcert and sslkey", distlock.ErrInvalidArgument, name)
		}
	}
	cfg, err := pgx.ParseConfig(rest.String())
	if err != nil {
		return nil, fmt.Errorf("%w: pgadvisory: %v", distlock.ErrInvalidArgument, err)
	}
	return New(cfg, &opts)
}
