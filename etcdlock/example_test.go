package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// The examples need an etcd cluster at the addresses they name: they
// compile, but have no "Output:" line, so `go test` does not run them.

// New makes a Locker over an etcd client the caller owns: Close of the
// Locker leaves the client open. Needs a server (not run).
func ExampleNew() {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"10.0.0.1:2379", "10.0.0.2:2379", "10.0.0.3:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	locker, err := etcdlock.New(cli, &etcdlock.Options{
		Prefix: "locks/", // lock k is the etcd prefix "locks/k/", as `etcdctl lock locks/k`
		Lock:   distlock.Options{TTL: 10 * time.Second},
	})
	if err != nil {
		log.Fatal(err) // matches distlock.ErrInvalidArgument: bad options
	}
	defer locker.Close()
	fmt.Println(locker.Guarantees().Backend)
}

// Open a Locker by URL: the Locker owns the client it opens and closes it
// at Close. Needs a server (not run).
func Example_openURL() {
	ctx := context.Background()
	locker, err := distlock.Open(ctx, "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/locks?ttl=10s&request_timeout=500ms")
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ls, err := locker.TryAcquire(ctx, "nightly-report")
	if errors.Is(err, distlock.ErrNotAcquired) {
		return // another process runs it
	}
	if err != nil {
		log.Fatal(err)
	}
	defer ls.Release(ctx)
}

// Acquire waits in the lock's queue; hold the lock under automatic
// extension and stop working when Done fires, then Release. Needs a
// server (not run).
func ExampleLocker_Acquire() {
	ctx := context.Background()
	locker, err := distlock.Open(ctx, "etcd://10.0.0.1:2379/locks")
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ls, err := locker.Acquire(actx, "billing-run", distlock.WithAutoExtend(time.Hour))
	if err != nil {
		log.Fatal(err) // ErrNotAcquired and DeadlineExceeded if still queued after 30 s
	}
	select {
	case <-ls.Done(): // lost: stop acting as the owner
		log.Print(ls.Err())
	case <-time.After(time.Minute): // the work
	}
	fmt.Println("fence", ls.Fence())
	if err := ls.Release(ctx); err != nil {
		log.Print(err) // ErrLeaseLost (etcdlock.ErrKeyGone) if the key had gone
	}
}

// A write in etcd that applies only while the lock is held, checked by the
// etcd cluster itself: safe even if this process was paused past its
// lease. Needs a server (not run).
func ExampleLocker_TxnIfHeld() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"10.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	locker, err := etcdlock.New(cli, &etcdlock.Options{Prefix: "locks/"})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ls, err := locker.Acquire(ctx, "config")
	if err != nil {
		log.Fatal(err)
	}
	defer ls.Release(ctx)
	if _, err := locker.TxnIfHeld(ctx, ls, clientv3.OpPut("config/current", "v2")); err != nil {
		log.Fatal(err) // matches distlock.ErrLeaseLost if the lock was lost: nothing written
	}
}
