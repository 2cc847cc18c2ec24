package pgadvisory

import (
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// statements are the SQL texts of one Locker. The fence comes from the
// sequence in the same statement as the lock (after the grant: the lock
// function runs in FROM, the target list after it), so an acquisition is
// one round trip. Each lock statement returns (got bool, fence bigint,
// pg_backend_pid() int4).
type statements struct {
	// session mode; tryKept and waitKept are try and wait for a session
	// whose idle timeout is already the TTL (see idle.go)
	try, wait, tryKept, waitKept, heartbeat, unlock string
	// transaction mode: the lock runs after begin and the TTL setting, in
	// one batch; the heartbeat is the same shape with the local setting.
	xtry, xwait, xsettings, xheartbeat string
	// fence set-up
	seqCheck, seqCreate, seqIdent string
}

func newStatements(sequence string, check time.Duration) *statements {
	ident := pgx.Identifier(strings.Split(sequence, ".")).Sanitize()
	next := "nextval(" + quoteLiteral(ident) + ")"
	return &statements{
		// $1 lock ID, $2 and $3 the TTL's settings (ttlArgs).
		try: "SELECT l.got, CASE WHEN l.got THEN " + next + " ELSE 0 END, pg_backend_pid(), " +
			"CASE WHEN l.got THEN " + ttlSettingsSQL("$2", "$3", false) + " END FROM pg_try_advisory_lock($1) AS l(got)",
		wait: "SELECT true, " + next + ", pg_backend_pid(), " + ttlSettingsSQL("$2", "$3", false) + " FROM pg_advisory_lock($1)",
		// $1 lock ID.
		tryKept:  "SELECT l.got, CASE WHEN l.got THEN " + next + " ELSE 0 END, pg_backend_pid() FROM pg_try_advisory_lock($1) AS l(got)",
		waitKept: "SELECT true, " + next + ", pg_backend_pid() FROM pg_advisory_lock($1)",
		// $1 and $2 the TTL's settings (ttlArgs).
		heartbeat: "SELECT pg_backend_pid(), " + ttlSettingsSQL("$1", "$2", false),
		// $1 lock ID. The session keeps its idle timeout (see idle.go).
		unlock: "SELECT pg_advisory_unlock($1), pg_backend_pid()",

		xtry:  "SELECT l.got, CASE WHEN l.got THEN " + next + " ELSE 0 END, pg_backend_pid() FROM pg_try_advisory_xact_lock($1) AS l(got)",
		xwait: "SELECT true, " + next + ", pg_backend_pid() FROM pg_advisory_xact_lock($1)",
		// $1 and $2 the TTL's settings (ttlArgs).
		xsettings:  xsettings(check),
		xheartbeat: "SELECT pg_backend_pid(), " + ttlSettingsSQL("$1", "$2", true),

		// No row: missing. Else whether it is a sequence and its settings
		// (see checkSequence).
		seqCheck: "SELECT c.relkind = 'S', coalesce(s.increment_by, 0), coalesce(s.cache_size, 0), coalesce(s.cycle, false), " +
			"coalesce(s.min_value, 0), coalesce(s.start_value, 0), s.last_value FROM pg_class c " +
			"JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_sequences s ON s.schemaname = n.nspname AND s.sequencename = c.relname " +
			"WHERE c.oid = to_regclass(" + quoteLiteral(ident) + ")",
		seqCreate: "CREATE SEQUENCE IF NOT EXISTS " + ident + " AS bigint",
		seqIdent:  ident,
	}
}

// xsettings sets the transaction's TTL settings ($1 and $2, see ttlArgs)
// and, unless check <= 0, its client connection check interval, all local
// to the transaction so that a pooler's shared server connection keeps
// its own settings.
func xsettings(check time.Duration) string {
	s := "SELECT " + ttlSettingsSQL("$1", "$2", true)
	if check > 0 {
		s += ", set_config('client_connection_check_interval', '" + strconv.FormatInt(max(check.Milliseconds(), 1), 10) + "', true)"
	}
	return s
}

// quoteLiteral quotes s as a SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
