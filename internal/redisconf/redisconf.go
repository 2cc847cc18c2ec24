// Package redisconf judges whether a Redis server's configuration keeps
// the keys a lock stores: lock keys and wait queues, which have a TTL, and
// fence counters, which have none. It does no I/O: a backend reads the
// configuration (CONFIG GET Pattern) and passes the reply to Check.
package redisconf

import (
	"fmt"
	"strings"

	"github.com/distlock/distlock"
)

// Pattern is the CONFIG GET argument that reads every setting Check
// judges, in one request that servers before Redis 7 (one pattern per
// CONFIG GET) accept too.
const Pattern = "maxmemory*"

// Check judges a CONFIG GET Pattern reply (setting name to value). It
// returns nil if the server never evicts keys, or if the reply lacks
// maxmemory-policy (it cannot tell); otherwise Eviction's *EvictionError.
func Check(config map[string]string) error {
	policy, ok := config["maxmemory-policy"]
	if !ok {
		return nil
	}
	return Eviction(policy, config["maxmemory"])
}

// Eviction judges a server's maxmemory-policy and maxmemory (a byte count,
// as CONFIG GET reports it; "" or "0": no limit). Redis evicts keys only
// when a memory limit is set and the policy is not noeviction: Eviction
// returns nil then, and otherwise an *EvictionError.
func Eviction(policy, maxmemory string) error {
	policy = strings.ToLower(policy)
	if policy == "noeviction" || maxmemory == "" || maxmemory == "0" {
		return nil
	}
	return &EvictionError{Policy: policy, MaxMemory: maxmemory}
}

// EvictionError says that a server may evict lock keys. It matches
// distlock.ErrInvalidArgument; its message is one line that names the
// policy, what it may evict and the fix, without the sentinel's text.
type EvictionError struct {
	Policy    string // maxmemory-policy, lower case
	MaxMemory string // maxmemory, as CONFIG GET reports it
}

// Error describes the hazard and the fix.
func (e *EvictionError) Error() string {
	var what string
	switch {
	case strings.HasPrefix(e.Policy, "volatile-"):
		what = "keys with a TTL, lock keys among them, so a held lock can vanish"
	case strings.HasPrefix(e.Policy, "allkeys-"):
		what = "any key, lock keys and the fence counter among them, so a held lock can vanish and fences can go back"
	default:
		what = "keys, lock keys perhaps among them"
	}
	return fmt.Sprintf("Redis maxmemory-policy %s with maxmemory %s may evict %s; set maxmemory-policy noeviction",
		e.Policy, e.MaxMemory, what)
}

// Unwrap makes errors.Is(err, distlock.ErrInvalidArgument) true.
func (e *EvictionError) Unwrap() error { return distlock.ErrInvalidArgument }
