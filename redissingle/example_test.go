package redissingle_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// A Locker over a client you own (New), Acquire and Release. Blocked
// Acquire calls are woken by the release itself; the fence goes with
// every write to the protected resource, which rejects fences lower than
// the last it saw. It needs a Redis server at localhost:6379, so it is
// compiled but not run by go test.
func Example() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer client.Close()
	locker, err := redissingle.New(client, &redissingle.Options{
		Lock: distlock.Options{TTL: 10 * time.Second},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := locker.Acquire(ctx, "invoice:42", distlock.WithAutoExtend(time.Minute))
	switch {
	case errors.Is(err, distlock.ErrNotAcquired):
		log.Fatal("still held by someone else after 5s: ", err)
	case err != nil:
		log.Fatal(err)
	}
	defer lease.Release(context.Background())

	fmt.Println("writing with fence", lease.Fence())
	select {
	case <-lease.Done(): // lost (expired, revoked): stop acting as the owner
		log.Print(lease.Err())
	case <-time.After(100 * time.Millisecond): // the work
	}
}

// Opening by URL (distlock.Open): the Locker owns its client and closes
// it on Close. It needs a Redis server at localhost:6379, so it is
// compiled but not run by go test.
func Example_open() {
	locker, err := distlock.Open(context.Background(),
		"redis://localhost:6379/0?ttl=10s&prefix=myapp:&dial_timeout=1s")
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	lease, err := locker.TryAcquire(context.Background(), "report:daily")
	if errors.Is(err, distlock.ErrNotAcquired) {
		return // another instance runs it
	} else if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
	fmt.Println(lease.Key(), lease.Fence())
}
