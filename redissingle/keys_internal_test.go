package redissingle

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
)

// TestSlot checks slot and crc16 against Redis Cluster's values (CLUSTER
// KEYSLOT, the CRC-16/XMODEM check value) and its hash tag rules.
func TestSlot(t *testing.T) {
	for key, want := range map[string]int{
		"foo":           12182, // CLUSTER KEYSLOT foo
		"123456789":     0x31c3 % numSlots,
		"{user1000}.x":  slot("user1000"),
		"a{user1000}.y": slot("user1000"),
		"{}x":           slot("{}x"), // empty tag: the whole key
		"x{":            slot("x{"),
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
	if crc16("123456789") != 0x31c3 {
		t.Fatalf("crc16 check value %#x", crc16("123456789"))
	}
}

// TestSlotTags checks that every hash slot has a 3-character tag that
// hashes to it, alone and inside a queue key.
func TestSlotTags(t *testing.T) {
	for s := range numSlots {
		tag := slotTag(s)
		if len(tag) != 3 || slot(tag) != s || slot("distlock:{"+tag+"}:q:anything{else}") != s {
			t.Fatalf("slot %d: tag %q hashes to %d", s, tag, slot(tag))
		}
	}
}

// TestKeysShareSlot checks that a lock key, its wait queue and (in
// Cluster) its fence counter share one hash slot, and the standalone
// fence counter's name.
func TestKeysShareSlot(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		c := redis.NewClient(&redis.Options{})
		defer c.Close()
		l, err := New(c, &Options{Prefix: "app:"})
		if err != nil {
			t.Fatal(err)
		}
		l.cluster = cluster
		for _, key := range []string{"a", "order:1001", "{tenant}x", "x{tenant}y", "日本"} {
			k := l.keysFor(key)
			if k.lock != "app:"+key {
				t.Fatalf("lock key %q", k.lock)
			}
			if slot(k.queue) != slot(k.lock) || (cluster && slot(k.fence) != slot(k.lock)) {
				t.Fatalf("cluster=%v key %q: slots lock %d queue %d fence %d", cluster, key, slot(k.lock), slot(k.queue), slot(k.fence))
			}
			if !cluster && k.fence != "app:distlock:fence" {
				t.Fatalf("standalone fence key %q", k.fence)
			}
		}
	}
}

// TestPollWait checks how long a queued waiter relies on push alone for
// each holder PTTL reply: until the holder expires, at most the limit.
func TestPollWait(t *testing.T) {
	const limit = 5 * 1e9
	for pttl, want := range map[int64]int64{-2: 0, 0: 0, -1: limit, 100: 101e6, 1e7: limit} {
		if got := pollWait(pttl, limit); int64(got) != want {
			t.Errorf("pollWait(%d) = %v, want %v", pttl, got, want)
		}
	}
}

// TestCheckKey checks which keys checkKey refuses (too long, or naming
// "distlock:" with the prefix), with a one-line ErrInvalidArgument.
func TestCheckKey(t *testing.T) {
	for _, c := range []struct {
		prefix, key string
		ok          bool
	}{
		{"", "a", true},
		{"app:", "distlock", true},
		{"", "distlock:fence", false},
		{"dist", "lock:fence", false}, // the lock key is "distlock:fence"
		{"app:", "x:distlock:", false},
		{"", strings.Repeat("\xff", MaxKeyLen), true},
		{"", strings.Repeat("\xff", MaxKeyLen+1), false},
		{"", strings.Repeat("\xff", 200) + "distlock:", false},
	} {
		err := checkKey(c.prefix, c.key)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, distlock.ErrInvalidArgument)) {
			t.Errorf("checkKey(%q, %.40q): %v, want ok %v", c.prefix, c.key, err, c.ok)
		}
		if err != nil && (len(err.Error()) > 300 || strings.Contains(err.Error(), "\n")) {
			t.Errorf("checkKey(%q, %.40q): error is not one short line: %q", c.prefix, c.key, err)
		}
	}
}
