package redisconf_test

import (
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redisconf"
)

// Judging a CONFIG GET maxmemory* reply: a server with a memory limit and
// an allkeys-* policy may evict lock keys and the fence counter.
func ExampleCheck() {
	reply := map[string]string{"maxmemory": "104857600", "maxmemory-policy": "allkeys-lru"}
	err := redisconf.Check(reply)
	fmt.Println(errors.Is(err, distlock.ErrInvalidArgument))
	fmt.Println(err)
	// Output:
	// true
	// Redis maxmemory-policy allkeys-lru with maxmemory 104857600 may evict any key, lock keys and the fence counter among them, so a held lock can vanish and fences can go back; set maxmemory-policy noeviction
}

// Eviction with noeviction, or without a memory limit, keeps every key.
func ExampleEviction() {
	fmt.Println(redisconf.Eviction("noeviction", "104857600"))
	fmt.Println(redisconf.Eviction("volatile-lru", "0"))
	// Output:
	// <nil>
	// <nil>
}
