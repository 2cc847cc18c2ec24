package pgadvisory

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/distlock/distlock"
)

// KeyID returns the advisory lock ID (the int8 key of pg_advisory_lock)
// of key in namespace: the first 8 bytes, read big-endian as a signed
// 64-bit integer, of SHA-256(namespace || 0x00 || key), the strings in
// UTF-8. It is stable across processes, builds and versions (golden
// values are tested), and the server computes the same with KeyIDSQL.
// Two different keys share an ID with probability 2^-64 per pair.
//
// The IDs use the int8 key space of pg_advisory_lock(bigint), which does
// not overlap the (int4, int4) space of pg_advisory_lock(int, int).
func KeyID(namespace, key string) int64 {
	h := sha256.New()
	h.Write([]byte(namespace))
	h.Write([]byte{0})
	h.Write([]byte(key))
	var sum [sha256.Size]byte
	return int64(binary.BigEndian.Uint64(h.Sum(sum[:0])[:8]))
}

// checkNamespace refuses a namespace holding a NUL byte, with an error
// matching distlock.ErrInvalidArgument. KeyID separates namespace and key
// by a NUL byte, so the first NUL of what it hashes ends the namespace:
// keys may hold NUL bytes, and namespaces must not, or namespace "a\x00b"
// with key "c" would be namespace "a" with key "b\x00c".
func checkNamespace(ns string) error {
	if strings.IndexByte(ns, 0) >= 0 {
		return fmt.Errorf("%w: pgadvisory: namespace %q contains a NUL byte, which separates namespace and key in KeyID; use a namespace without NUL",
			distlock.ErrInvalidArgument, ns)
	}
	return nil
}

// KeyIDSQL is a SQL expression of KeyID for namespace $1 and key $2 (both
// text, so it covers the keys that are valid UTF-8 without NUL; KeyID
// takes any bytes), for finding a lock in pg_locks or taking it from SQL:
//
//	SELECT pg_advisory_lock(<KeyIDSQL>) -- with $1 = 'distlock', $2 = 'invoice:42'
//
// In pg_locks, an int8 advisory lock shows as locktype 'advisory',
// objsubid 1, classid the high 32 bits and objid the low 32 bits.
const KeyIDSQL = `('x' || encode(substr(sha256(convert_to($1::text, 'UTF8') || '\x00'::bytea || convert_to($2::text, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint`

// LocksSQL selects the pid and granted flag of every session holding or
// waiting for the int8 advisory lock $1, from pg_locks.
const LocksSQL = `SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`
