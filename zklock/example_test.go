package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// A Locker over a three-server ensemble. Waiters queue in order and are
// woken by the release itself; the fence is the lock node's transaction
// id, which the protected resource compares with the last it saw.
func Example() {
	locker, err := zklock.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, &zklock.Options{
		Lock: distlock.Options{TTL: 10 * time.Second}, // also the session timeout
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
	case <-lease.Done(): // lost: session expired, node deleted, connection lost too long
		log.Print(lease.Err())
	case <-time.After(100 * time.Millisecond): // the work
	}
}

// Opening by URL: the path is the prefix under which lock nodes live.
func Example_open() {
	locker, err := distlock.Open(context.Background(),
		"zk://zk1:2181,zk2:2181,zk3:2181/myapp/locks?ttl=6s")
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

// A write inside ZooKeeper that applies only while the lease holds: the
// transaction checks the lock node first, so a holder that was paused past
// its session cannot overwrite its successor's value.
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
