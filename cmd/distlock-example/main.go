// Command distlock-example is the README's main job: several workers share
// a counter protected by one lock and a fenced register, on the backend
// named by $DISTLOCK_URL (default mem://, the in-process backend).
//
//	go run ./cmd/distlock-example
//	DISTLOCK_URL=redis://127.0.0.1:6379/0 go run ./cmd/distlock-example
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/distlock/distlock"
	_ "github.com/distlock/distlock/all"
	"github.com/distlock/distlock/fencing"
)

func main() {
	if err := run(context.Background(), envOr("DISTLOCK_URL", "mem://"), 4, 5); err != nil {
		fmt.Fprintln(os.Stderr, "distlock-example:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// run starts workers that each take the lock rounds times and increment a
// counter kept in a fenced register, then checks nothing was lost.
func run(ctx context.Context, url string, workers, rounds int) error {
	locker, err := distlock.Open(ctx, url)
	if err != nil {
		return err
	}
	defer locker.Close()
	g := locker.Guarantees()
	fmt.Printf("backend %s: fence %s, lost-lease notification %v, servers tolerated down %d\n",
		g.Backend, g.Fence, g.LostNotification, g.ToleratedFailures)

	key := fmt.Sprintf("distlock-example/%d", time.Now().UnixNano())
	var counter fencing.Register[int]
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				if err := increment(ctx, locker, key, &counter); err != nil {
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return err
	}
	v, fence := counter.Read()
	fmt.Printf("counter = %d after %d increments; highest fence %d\n", v, workers*rounds, fence)
	if v != workers*rounds {
		return fmt.Errorf("lost updates: counter %d, want %d", v, workers*rounds)
	}
	return nil
}

// increment is the critical section: acquire with automatic extension,
// write through the fence, release.
func increment(ctx context.Context, locker distlock.Locker, key string, counter *fencing.Register[int]) error {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lease, err := locker.Acquire(actx, key, distlock.WithTTL(2*time.Second), distlock.WithAutoExtend(time.Minute))
	if err != nil {
		return err
	}
	defer lease.Release(ctx)
	v, _ := counter.Read()
	time.Sleep(time.Millisecond) // the work
	select {
	case <-lease.Done():
		return lease.Err() // lost: stop acting as the owner
	default:
	}
	return counter.Write(lease.Fence(), v+1) // a stale holder is rejected here
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}
