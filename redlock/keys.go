package redlock

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/distlock/distlock"
)

// Key layout. For the caller's key k, with P = Options.Prefix:
//
//	P + k                  the lock: a string holding the holder's token
//	P + "distlock:fence"   the node's fence counter, shared by every key
//	P + "distlock:q:" + k  the lock's wait queue (a sorted set)
//	P + "distlock:w:" + id a Locker's pub/sub channel
//
// The lock's value is only the token, so that redsync and other Redlock
// clients on the same key exclude this Locker and it them. The wait queue
// holds "channel|id" entries scored by each waiter's arrival time, so that
// every node orders the same waiters the same way and a release on all
// nodes wakes the same waiter on each.
//
// Only the Locker's own names contain reserved (see checkKey, and New for
// the Prefix).

// reserved marks the Locker's own keys and channels.
const reserved = "distlock:"

// MaxKeyLen is the longest key, in bytes, a Locker accepts:
// distlock.MaxKeyLen (4096), the limit of every backend, so a key valid
// elsewhere is valid here. Every request about a key carries it to every
// node.
const MaxKeyLen = distlock.MaxKeyLen

// checkKey returns an error matching distlock.ErrInvalidArgument if key
// is longer than MaxKeyLen or its lock name (Prefix + key) contains
// "distlock:". Every other key, of any bytes, is a lock of its own.
func (l *Locker) checkKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: redlock: key is %d bytes, longer than MaxKeyLen (%d bytes): use a shorter key, or a hash of it",
			distlock.ErrInvalidArgument, len(key), MaxKeyLen)
	}
	if strings.Contains(l.opts.Prefix+key, reserved) {
		return fmt.Errorf("%w: redlock: key %s: %q is reserved for the Locker's own keys: use a key without it",
			distlock.ErrInvalidArgument, quoteShort(key), reserved)
	}
	return nil
}

// quoteShort quotes key for an error message, cut after 32 bytes so that
// the message stays one short line.
func quoteShort(key string) string {
	const limit = 32
	if len(key) <= limit {
		return strconv.Quote(key)
	}
	return strconv.Quote(key[:limit]) + fmt.Sprintf("... (%d bytes)", len(key))
}

// keys are the Redis keys of one lock on every node.
type keys struct{ lock, fence, queue string }

func (l *Locker) keysFor(key string) keys {
	return keys{lock: l.opts.Prefix + key, fence: l.fenceKey, queue: l.opts.Prefix + reserved + "q:" + key}
}
