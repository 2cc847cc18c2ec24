package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/zklock"
)

// The examples need a ZooKeeper ensemble at the addresses they name: they
// compile, but have no "Output:" line, so `go test` does not run them.

// New makes a Locker over a three-server ensemble. It does no I/O: the
// session for a TTL is opened on the first acquisition with that TTL.
// Needs a server (not run).
func ExampleNew() {
	locker, err := zklock.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, &zklock.Options{
		Prefix: "/myapp/locks",
		Lock:   distlock.Options{TTL: 10 * time.Second}, // also the session timeout
	})
	if err != nil {
		log.Fatal(err) // matches distlock.ErrInvalidArgument: bad options
	}
	defer locker.Close()
	fmt.Println(locker.Guarantees().Backend, locker.Path("invoice:42"))
}

// Open a Locker by URL: the path is the prefix under which lock nodes
// live. Needs a server (not run).
func Example_openURL() {
	ctx := context.Background()
	locker, err := distlock.Open(ctx, "zk://zk1:2181,zk2:2181,zk3:2181/myapp/locks?ttl=6s")
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	lease, err := locker.TryAcquire(ctx, "report:daily")
	if errors.Is(err, distlock.ErrNotAcquired) {
		return // another instance runs it
	}
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
}

// Acquire queues behind the holder and is woken by its release; hold the
// lock under automatic extension, stop working when Done fires, then
// Release. Needs a server (not run).
func ExampleLocker_Acquire() {
	locker, err := zklock.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lease, err := locker.Acquire(ctx, "invoice:42", distlock.WithAutoExtend(time.Minute))
	if err != nil {
		log.Fatal(err) // ErrNotAcquired and DeadlineExceeded if still queued after 5 s
	}
	select {
	case <-lease.Done(): // lost: session expired, node deleted, connection lost too long
		log.Print(lease.Err())
	case <-time.After(100 * time.Millisecond): // the work
	}
	if err := lease.Release(context.Background()); err != nil {
		log.Print(err) // matches distlock.ErrLeaseLost if the lease had been lost
	}
}

// The fence is the lock node's creation transaction id, increasing across
// holders: the protected resource admits a write only with a fence at
// least the highest it has seen, so a holder paused past its session
// cannot overwrite its successor's work. Needs a server (not run).
func Example_fence() {
	var resource fencing.Guard // on the resource's side
	locker, err := zklock.New([]string{"zk1:2181"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ctx := context.Background()
	lease, err := locker.Acquire(ctx, "invoice:42")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	if err := resource.Admit("invoice:42", lease.Fence()); errors.Is(err, fencing.ErrStaleFence) {
		log.Print("a later holder has written: ", err)
	}
}

// A write inside ZooKeeper that applies only while the lease holds: the
// transaction checks the lock node first, so a holder that was paused past
// its session cannot overwrite its successor's value. Needs a server (not
// run).
func ExampleLocker_MultiIfHeld() {
	locker, err := zklock.New([]string{"zk1:2181"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ctx := context.Background()
	lease, err := locker.Acquire(ctx, "config")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(ctx)
	_, err = locker.MultiIfHeld(ctx, lease, &zk.SetDataRequest{Path: "/myapp/config", Data: []byte("v2"), Version: -1})
	if errors.Is(err, distlock.ErrLeaseLost) {
		log.Print("not the holder any more: ", err)
	}
}
