package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/redlock"
)

// The examples need three Redis masters at localhost:6379, 6380 and 6381,
// so they have no Output line: go test compiles them but does not run
// them.

// A Locker over three independent Redis masters, with a node timeout of
// its own; the other options keep their defaults.
func ExampleNew() {
	l, err := redlock.New([]string{"localhost:6379", "localhost:6380", "localhost:6381"},
		&redlock.Options{NodeTimeout: 100 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	fmt.Println(l.Guarantees().ToleratedFailures) // 1 of 3 nodes may be down
}

// Opening a Locker from a URL: importing redlock registers the scheme.
func Example_open() {
	l, err := distlock.Open(context.Background(),
		"redlock://localhost:6379,localhost:6380,localhost:6381?ttl=10s&node_timeout=100ms")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
}

// Acquire blocks until the lock is free or ctx ends; Release gives it
// back. TryAcquire makes one attempt.
func ExampleLocker_Acquire() {
	l, err := redlock.New([]string{"localhost:6379", "localhost:6380", "localhost:6381"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := l.Acquire(ctx, "orders/42", distlock.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err) // matches distlock.ErrNotAcquired if ctx ended first
	}
	defer lease.Release(context.Background())

	if _, err := l.TryAcquire(ctx, "orders/42"); errors.Is(err, distlock.ErrNotAcquired) {
		fmt.Println("held") // by the lease above
	}
}

// The lease's fence guards a write to a resource: a paused former holder,
// whose lease has expired, carries a lower fence and is refused.
func ExampleLocker_fence() {
	l, err := redlock.New([]string{"localhost:6379", "localhost:6380", "localhost:6381"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	var guard fencing.Guard // on the resource's side
	lease, err := l.Acquire(context.Background(), "orders/42")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background())
	if err := guard.Admit("orders/42", lease.Fence()); err != nil {
		log.Fatal(err) // matches fencing.ErrStaleFence: a later holder wrote
	}
	fmt.Println("written under fence", lease.Fence())
}
