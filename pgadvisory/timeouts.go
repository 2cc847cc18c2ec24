package pgadvisory

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/distlock/distlock"
)

// The server frees a session's advisory locks when the session ends. A
// lease's validity counts from before the request the server last
// answered, so the server must not end the session of a silent holder
// sooner than a TTL after it received that request. Three things end a
// silent session, and each lease sets all three from its TTL (the lock
// statement and every heartbeat set them; idle.go keeps them on pooled
// connections):
//
//   - idle_session_timeout (in ModeTransaction
//     idle_in_transaction_session_timeout), the TTL: the server's idle
//     clock starts after it has read the request;
//   - the server's TCP keepalive, which declares a peer dead some probes
//     after it last received anything from it: tcp_keepalives_idle is the
//     TTL rounded up to whole seconds, so the first probe comes no sooner;
//   - the server's TCP retransmission of a reply the client never
//     acknowledged, given up after tcp_user_timeout (counted from the
//     retransmission, after the request arrived): the TTL. On Linux this
//     setting also bounds keepalive from below, whatever the probe
//     settings.
//
// Left to the server's configuration or to the Locker's short liveness
// settings (pool.go), the last two could end a partitioned holder's
// session seconds after its last request while its lease still claimed
// most of a TTL. A dead holder's lock is still freed: a TTL after it last
// reached the server, like every TTL-based backend.

// MaxTTL is the longest TTL a lease may have, for Acquire and Extend
// alike: the longest the server's millisecond timeout settings hold (an
// int4 of milliseconds, about 24.8 days). A longer TTL is refused with an
// error matching distlock.ErrInvalidArgument, rather than enforced for
// less than the lease would claim. On a server whose operating system
// lacks tcp_user_timeout (Postgres honours it on Linux only), keepalive
// alone holds a silent holder's session, for at most 32767 s (about 9.1
// h) plus its probes: keep TTLs below that there (auto-extension renews a
// lease within its TTL).
const MaxTTL = math.MaxInt32 * time.Millisecond

// checkTTL refuses a TTL above MaxTTL.
func checkTTL(ttl time.Duration) error {
	if ttl > MaxTTL {
		return fmt.Errorf("%w: pgadvisory: TTL %v exceeds MaxTTL, %v, the longest the server's millisecond timeouts hold",
			distlock.ErrInvalidArgument, ttl, MaxTTL)
	}
	return nil
}

// maxKeepaliveIdle is the longest tcp_keepalives_idle Linux accepts, in
// seconds. A longer TTL keeps the longest: tcp_user_timeout, which Linux
// applies to keepalive too, still holds the session for the TTL.
const maxKeepaliveIdle = 32767

// msSetting is d as a milliseconds setting of the server holds it: whole
// milliseconds, at least 1, at most an int4.
func msSetting(d time.Duration) time.Duration {
	return time.Duration(min(max(d.Milliseconds(), 1), math.MaxInt32)) * time.Millisecond
}

// msText renders d as the text of a milliseconds setting.
func msText(d time.Duration) string {
	return strconv.FormatInt(msSetting(d).Milliseconds(), 10)
}

// keepaliveIdleText renders ttl rounded up to whole seconds, at least 1 and
// at most maxKeepaliveIdle, as the text of tcp_keepalives_idle.
func keepaliveIdleText(ttl time.Duration) string {
	s := (ttl + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(min(max(s, 1), maxKeepaliveIdle)), 10)
}

// ttlArgs are the parameters of ttlSettingsSQL for ttl, in order.
func ttlArgs(ttl time.Duration) []any {
	return []any{msText(ttl), keepaliveIdleText(ttl)}
}

// ttlSettingsSQL is a text expression that sets the settings enforcing a
// TTL (see above) for the session, or for the transaction if local: ms
// and s are the parameters holding msText and keepaliveIdleText (see
// ttlArgs).
func ttlSettingsSQL(ms, s string, local bool) string {
	idle, scope := "idle_session_timeout", "false"
	if local {
		idle, scope = "idle_in_transaction_session_timeout", "true"
	}
	return "set_config('" + idle + "', " + ms + ", " + scope + ") || " +
		"set_config('tcp_user_timeout', " + ms + ", " + scope + ") || " +
		"set_config('tcp_keepalives_idle', " + s + ", " + scope + ")"
}
