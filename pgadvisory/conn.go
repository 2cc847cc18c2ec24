package pgadvisory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock"
)

var (
	// ErrAuthFailed: the server refused the connection's credentials
	// (wrong password, unknown user, or a pg_hba.conf line that rejects
	// the client). No retry fixes it: the call returns it at once. It
	// matches distlock.ErrUnavailable.
	ErrAuthFailed = fmt.Errorf("%w: pgadvisory: authentication failed", distlock.ErrUnavailable)

	// ErrTLS: the connection's TLS settings (sslmode, sslrootcert,
	// sslcert, sslkey, or ConnConfig.TLSConfig) do not match the
	// server's: a server certificate not trusted or not naming the host,
	// TLS asked of a server without it, or a plaintext connection where
	// the server accepts the user only over TLS. No retry fixes it. It
	// matches distlock.ErrUnavailable.
	ErrTLS = fmt.Errorf("%w: pgadvisory: TLS", distlock.ErrUnavailable)
)

// refused classifies a failed connection attempt as user: a one-line
// error matching ErrAuthFailed or ErrTLS when the cause is the
// credentials or the TLS settings, else nil. pgx's errors name the user
// and database, never the password.
func refused(err error, user string) error {
	msg := oneLine(err.Error())
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "28P01": // invalid_password
			return fmt.Errorf("%w for user %q: wrong password (or the user has none): %s", ErrAuthFailed, user, msg)
		case pe.Code == "28000" && strings.Contains(pe.Message, "no encryption"):
			return fmt.Errorf("%w: the server accepts user %q only over TLS: TLS settings may not match the server (use sslmode=verify-full or require): %s", ErrTLS, user, msg)
		case pe.Code == "28000" && strings.Contains(pe.Message, "encryption"):
			return fmt.Errorf("%w: the server refuses user %q over TLS: TLS settings may not match the server (use sslmode=disable or prefer): %s", ErrTLS, user, msg)
		case pe.Code == "28000":
			return fmt.Errorf("%w for user %q: %s", ErrAuthFailed, user, msg)
		}
		return nil
	}
	switch {
	case strings.Contains(msg, "x509:"), strings.Contains(msg, "tls: failed to verify"):
		return fmt.Errorf("%w: server certificate rejected (check sslrootcert, and that the certificate names the host dialled): %s", ErrTLS, msg)
	case strings.Contains(msg, "server refused TLS connection"):
		return fmt.Errorf("%w: the server does not accept TLS (ssl=off): TLS settings may not match the server (use sslmode=disable or prefer): %s", ErrTLS, msg)
	case strings.Contains(msg, "remote error: tls:"):
		return fmt.Errorf("%w: the server refused the TLS handshake (a client certificate it requires or trusts? see sslcert, sslkey): %s", ErrTLS, msg)
	}
	return nil
}

// notQueuedError is a failure before the lock statement was sent
// (errNotQueued), with the cause's text on one line.
type notQueuedError struct{ err error }

func (e notQueuedError) Error() string   { return oneLine(e.err.Error()) }
func (e notQueuedError) Unwrap() []error { return []error{errNotQueued, e.err} }

// oneLine joins the lines of a multi-line error text (pgx lists one line
// per address and TLS fallback it tried) with "; ".
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "; ")
}

// isRefusal reports whether err is one no retry fixes (see refused).
func isRefusal(err error) bool {
	return errors.Is(err, ErrAuthFailed) || errors.Is(err, ErrTLS)
}
