package pgadvisory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock"
)

// refused classifies a failed connection attempt as user: a one-line
// error matching distlock.ErrAccessDenied or distlock.ErrTLS when the
// cause is the credentials or the TLS settings, else nil. pgx's errors
// name the user and database, never the password.
//
// pgx may make several attempts per connect (each address, and under
// sslmode=prefer or allow a second one with the other TLS setting) and
// joins their errors. Refused credentials count whichever attempt saw
// them, as every attempt sends the same ones. A TLS refusal is specific
// to its attempt's TLS setting, so it counts only when every attempt was
// refused (the classification is then the last attempt's): an attempt
// that failed for a passing reason (a reset, a timeout, a restarting
// server), or a request that ran out of time, leaves err retryable.
func refused(err error, user string) error {
	if errors.Is(err, errRequestTimeout) {
		return nil
	}
	msg := oneLine(err.Error())
	var last error
	all := true
	for _, a := range attempts(err) {
		r := refusedAttempt(a, user, msg)
		if errors.Is(r, distlock.ErrAccessDenied) {
			return r
		}
		if r == nil {
			all = false
		}
		last = r
	}
	if !all {
		return nil
	}
	return last
}

// attempts splits a pgx connect error into the errors of its attempts.
func attempts(err error) []error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		err = ce.Unwrap()
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// refusedAttempt classifies one attempt's error a as refused does; msg is
// the whole error's text, for the message.
func refusedAttempt(a error, user, msg string) error {
	var pe *pgconn.PgError
	if errors.As(a, &pe) {
		switch {
		case pe.Code == "28P01": // invalid_password
			return fmt.Errorf("%w: pgadvisory: authentication failed for user %q: wrong password (or the user has none): %s", distlock.ErrAccessDenied, user, msg)
		case pe.Code == "28000" && strings.Contains(pe.Message, "no encryption"):
			return fmt.Errorf("%w: pgadvisory: the server accepts user %q only over TLS: TLS settings may not match the server (use sslmode=verify-full or require): %s", distlock.ErrTLS, user, msg)
		case pe.Code == "28000" && strings.Contains(pe.Message, "encryption"):
			return fmt.Errorf("%w: pgadvisory: the server refuses user %q over TLS: TLS settings may not match the server (use sslmode=disable or prefer): %s", distlock.ErrTLS, user, msg)
		case pe.Code == "28000":
			return fmt.Errorf("%w: pgadvisory: authentication failed for user %q: %s", distlock.ErrAccessDenied, user, msg)
		}
		return nil
	}
	text := a.Error()
	switch {
	case strings.Contains(text, "x509:"), strings.Contains(text, "tls: failed to verify"):
		return fmt.Errorf("%w: pgadvisory: server certificate rejected (check sslrootcert, and that the certificate names the host dialled): %s", distlock.ErrTLS, msg)
	case strings.Contains(text, "server refused TLS connection"):
		return fmt.Errorf("%w: pgadvisory: the server does not accept TLS (ssl=off): TLS settings may not match the server (use sslmode=disable or prefer): %s", distlock.ErrTLS, msg)
	case strings.Contains(text, "remote error: tls:"):
		return fmt.Errorf("%w: pgadvisory: the server refused the TLS handshake (a client certificate it requires or trusts? see sslcert, sslkey): %s", distlock.ErrTLS, msg)
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
	return errors.Is(err, distlock.ErrAccessDenied) || errors.Is(err, distlock.ErrTLS)
}
