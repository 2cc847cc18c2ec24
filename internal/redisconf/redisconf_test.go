package redisconf

import (
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock"
)

func TestEviction(t *testing.T) {
	for _, c := range []struct {
		policy, maxmemory string
		refused           bool
		names             string // a part of the error naming what may be evicted
	}{
		{"noeviction", "0", false, ""},
		{"noeviction", "104857600", false, ""},
		{"NoEviction", "104857600", false, ""},
		{"allkeys-lru", "0", false, ""}, // no limit: nothing is evicted
		{"volatile-lru", "", false, ""},
		{"allkeys-lru", "104857600", true, "fence counter"},
		{"allkeys-lfu", "1", true, "fence counter"},
		{"allkeys-random", "104857600", true, "fence counter"},
		{"volatile-lru", "104857600", true, "keys with a TTL"},
		{"volatile-lfu", "104857600", true, "keys with a TTL"},
		{"volatile-random", "104857600", true, "keys with a TTL"},
		{"volatile-ttl", "104857600", true, "keys with a TTL"},
		{"some-future-policy", "104857600", true, "perhaps"},
		{"allkeys-lru", "lots", true, "fence counter"},
	} {
		err := Eviction(c.policy, c.maxmemory)
		if !c.refused {
			if err != nil {
				t.Errorf("Eviction(%q, %q): %v, want nil", c.policy, c.maxmemory, err)
			}
			continue
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		var ee *EvictionError
		if !errors.Is(err, distlock.ErrInvalidArgument) || !errors.As(err, &ee) || ee.Policy != strings.ToLower(c.policy) ||
			strings.Contains(msg, "\n") || strings.Contains(msg, distlock.ErrInvalidArgument.Error()) ||
			!strings.Contains(msg, strings.ToLower(c.policy)) || !strings.Contains(msg, c.maxmemory) ||
			!strings.Contains(msg, c.names) || !strings.Contains(msg, "set maxmemory-policy noeviction") {
			t.Errorf("Eviction(%q, %q): %v, want a one-line ErrInvalidArgument naming the policy, the limit, %q and the fix",
				c.policy, c.maxmemory, err, c.names)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check(map[string]string{}); err != nil {
		t.Errorf("empty reply (no CONFIG, or a proxy): %v, want nil", err)
	}
	if err := Check(map[string]string{"maxmemory": "104857600", "maxmemory-policy": "noeviction", "maxmemory-samples": "5"}); err != nil {
		t.Errorf("noeviction: %v", err)
	}
	err := Check(map[string]string{"maxmemory": "104857600", "maxmemory-policy": "allkeys-lru"})
	if !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("allkeys-lru with a limit: %v, want ErrInvalidArgument", err)
	}
	if err := Check(map[string]string{"maxmemory-policy": "allkeys-lru"}); err != nil {
		t.Errorf("allkeys-lru without maxmemory in the reply (no limit): %v", err)
	}
}
