package etcdlock

import (
	"bytes"
	"fmt"

	"github.com/distlock/distlock"
)

// The etcd keys of a lock. The lock of key k is the prefix Prefix+k+"/",
// as concurrency.NewMutex(s, Prefix+k) derives it, and its entries are
// the keys directly under that prefix: the prefix followed by a name
// without "/", which is the etcd lease ID in hex for this Locker and for
// Mutex. The keys further down belong to other locks, those of longer keys
// (the entries of "p/42" are "p/42/<lease>", under "p/" too, but not
// directly): a lock skips them, so that "p" and "p/42" are independent
// locks. No entry of one lock is an entry of another: Prefix+k+"/"+x with
// no "/" in x determines k.

// MaxKeyLen is the longest key, in bytes, a Locker accepts
// (distlock.MaxKeyLen, the limit of every backend), and the longest
// Options.Prefix. A key's entry name appears several times in one
// transaction; at these lengths a request stays far below etcd's default
// request limit (--max-request-bytes, 1.5 MiB).
const MaxKeyLen = distlock.MaxKeyLen

// checkKey refuses a key longer than MaxKeyLen with an error matching
// distlock.ErrInvalidArgument. Any other non-empty byte string is a key:
// "/", NUL bytes and invalid UTF-8 included (etcd keys are bytes).
func checkKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: etcdlock: key of %d bytes is longer than MaxKeyLen (%d bytes); use a shorter key, or a hash of it",
			distlock.ErrInvalidArgument, len(key), MaxKeyLen)
	}
	return nil
}

// prefix is the etcd prefix of the lock of key.
func (l *Locker) prefix(key string) string { return l.opts.Prefix + key + "/" }

// etcdKey is the entry of session s in the lock of key.
func (l *Locker) etcdKey(key string, s *session) string { return l.prefix(key) + s.hex }

// isEntry reports whether k, a key under the lock prefix pfx, is an entry
// of that lock (directly under it) rather than a key of a lock of a
// longer key.
func isEntry(pfx string, k []byte) bool {
	name := k[len(pfx):]
	return len(name) > 0 && bytes.IndexByte(name, '/') < 0
}

// streamKeeperKey is the key the stream keeper watches (stream.go). No
// lock writes it: every key of a lock ends with "/" and a name, and this
// one has no "/" after the prefix.
func (l *Locker) streamKeeperKey() string { return l.opts.Prefix + "\x00distlock-stream-keeper" }
