package redissingle

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/distlock/distlock"
)

// Key layout. For the caller's key k, with P = Options.Prefix:
//
//	P + k                        the lock: a plain string holding the token,
//	                             "token:" or "token:fence" once waiters queue
//	P + "distlock:{T}:q:" + k    its wait queue (a list), only while someone
//	                             waits; T is a tag in the lock's hash slot
//	P + "distlock:fence"         the fence counter (standalone, Sentinel)
//	P + "distlock:{T}:fence"     the lock's hash slot's counter (Cluster)
//	P + "distlock:w:" + id       the pub/sub channel of one Locker
//
// Redis Cluster runs a script only if all its keys are in one hash slot, so
// the queue and the counter carry a hash tag {T} chosen to land in the slot
// of the lock. Fence state is one key per server, or at most one per hash
// slot (16384) in Cluster, however many lock keys are used.
//
// Every internal key and channel contains "distlock:", and no lock key
// may (checkKey): so no lock key, whatever the prefixes of the Lockers
// sharing a server, can be another Locker's fence counter, wait queue or
// channel.

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// keySet names the server keys one lock key uses.
type keySet struct {
	lock, queue, fence string
}

// all returns the keys in the order the scripts expect them.
func (k keySet) all() []string { return []string{k.lock, k.queue, k.fence} }

// keysFor returns the key set of the caller's key.
func (l *Locker) keysFor(key string) keySet {
	lock := l.opts.Prefix + key
	t := &slotTags()[slot(lock)]
	k := keySet{lock: lock, queue: l.ns + "{" + string(t[:]) + "}:q:" + key, fence: l.fenceKey}
	if l.cluster {
		k.fence = l.ns + "{" + string(t[:]) + "}:fence"
	}
	return k
}

// slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its hash tag (the part between the first "{" and the next "}",
// if not empty), modulo 16384.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) % numSlots
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var c uint16
	for i := 0; i < len(s); i++ {
		c = c<<8 ^ crcTable[byte(c>>8)^s[i]]
	}
	return c
}

const tagAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// slotTags holds, for every hash slot, a 3-character alphanumeric string
// that hashes to it. It is computed once, on first use, by trying the
// 62^3 candidates in order; every slot is reached, which
// TestSlotTags checks.
var slotTags = sync.OnceValue(func() *[numSlots][3]byte {
	var tags [numSlots][3]byte
	var found [numSlots]bool
	left := numSlots
	var b [3]byte
	for _, x := range []byte(tagAlphabet) {
		for _, y := range []byte(tagAlphabet) {
			for _, z := range []byte(tagAlphabet) {
				b = [3]byte{x, y, z}
				s := int(crc16(string(b[:]))) % numSlots
				if !found[s] {
					found[s], tags[s] = true, b
					if left--; left == 0 {
						return &tags
					}
				}
			}
		}
	}
	return &tags // not reached: every slot has a tag (TestSlotTags)
})

// slotTag returns a short string whose hash slot is s.
func slotTag(s int) string {
	t := slotTags()[s]
	return string(t[:])
}

// MaxKeyLen is the longest key, in bytes, a Locker accepts:
// distlock.MaxKeyLen, the limit of every backend. Redis itself takes keys
// up to 512 MB; a key is stored twice (the lock and its wait queue's
// name), far below that.
const MaxKeyLen = distlock.MaxKeyLen

// reserved is part of the name of every key and channel a Locker uses for
// itself.
const reserved = "distlock:"

// checkKey returns an error matching distlock.ErrInvalidArgument if key is
// longer than MaxKeyLen or its lock key (prefix + key) contains
// "distlock:". Empty keys are refused by distlock.CheckKey.
func checkKey(prefix, key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: redissingle: key of %d bytes is longer than MaxKeyLen (%d bytes); use a shorter key, or a hash of it",
			distlock.ErrInvalidArgument, len(key), MaxKeyLen)
	}
	if strings.Contains(key, reserved) {
		return fmt.Errorf("%w: redissingle: key %s contains %q, reserved for the Lockers' own keys; use another key",
			distlock.ErrInvalidArgument, quoteShort(key), reserved)
	}
	if strings.Contains(prefix+key, reserved) {
		return fmt.Errorf("%w: redissingle: prefix %q + key %s contains %q, reserved for the Lockers' own keys; use another key",
			distlock.ErrInvalidArgument, prefix, quoteShort(key), reserved)
	}
	return nil
}

// quoteShort quotes s for an error message, cut after 32 bytes.
func quoteShort(s string) string {
	const limit = 32
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + fmt.Sprintf("... (%d bytes)", len(s))
}
