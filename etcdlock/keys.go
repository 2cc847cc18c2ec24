package etcdlock

import (
	"bytes"
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
