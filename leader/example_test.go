package leader_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/distlock/distlock/leader"
	"github.com/distlock/distlock/memlock"
)

// A Candidate campaigns until its context ends; the leader's work runs
// with a context that ends with the term.
func ExampleCandidate() {
	locker := memlock.New(nil) // in a service: one of the networked backends
	defer locker.Close()
	ctx, shutdown := context.WithCancel(context.Background())

	c, err := leader.NewCandidate(locker, "scheduler", func(ctx context.Context, term leader.Term) error {
		fmt.Println("leading with fence", term.Fence)
		shutdown() // here the service shuts down at once
		<-ctx.Done()
		return nil
	}, leader.WithObserver(func(ev leader.Event) {
		fmt.Println("event:", ev.Kind)
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = c.Run(ctx)
	fmt.Println("Run ended by the shutdown:", errors.Is(err, context.Canceled))
	// Output:
	// event: elected
	// leading with fence 1
	// event: stepped down
	// Run ended by the shutdown: true
}

// Resign hands leadership over: the work's context ends with ErrResigned
// and a waiting candidate takes over, with a higher fence.
func ExampleCandidate_Resign() {
	locker := memlock.New(nil)
	defer locker.Close()
	other := locker.NewHandle() // a second client, as another process would have
	defer other.Close()
	ctx, cancel := context.WithCancel(context.Background())

	elected := make(chan string, 2)
	work := func(name string) leader.Work {
		return func(ctx context.Context, term leader.Term) error {
			elected <- fmt.Sprintf("%s leads with fence %d", name, term.Fence)
			<-ctx.Done()
			if errors.Is(context.Cause(ctx), leader.ErrResigned) {
				fmt.Println(name, "resigned")
			}
			return nil
		}
	}
	a, _ := leader.NewCandidate(locker, "scheduler", work("a"))
	b, _ := leader.NewCandidate(other, "scheduler", work("b"))

	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	fmt.Println(<-elected)
	wg.Go(func() { _ = b.Run(ctx) })
	if err := a.Resign(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println(<-elected)
	cancel()
	wg.Wait()
	// Output:
	// a leads with fence 1
	// a resigned
	// b leads with fence 2
}

// The leader publishes its identity; any process finds it with Observe.
func ExampleObserve() {
	locker := memlock.New(nil)
	defer locker.Close()
	follower := locker.NewHandle() // another process's client, in a service
	defer follower.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	leading := make(chan struct{})
	c, _ := leader.NewCandidate(locker, "scheduler", func(ctx context.Context, _ leader.Term) error {
		close(leading)
		<-ctx.Done()
		return nil
	}, leader.WithIdentity("10.0.0.7:8080"))
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Run(ctx) })
	<-leading

	who, err := leader.Observe(ctx, follower, "scheduler")
	fmt.Println(who.Elected, who.Identity, who.Fence, err)
	cancel()
	wg.Wait()
	// Output:
	// true 10.0.0.7:8080 1 <nil>
}
