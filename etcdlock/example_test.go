package etcdlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// Open a Locker on a 3-member cluster by URL, hold a lock under automatic
// extension, and stop working when Done fires.
func Example() {
	ctx := context.Background()
	locker, err := distlock.Open(ctx, "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/locks?ttl=10s")
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ls, err := locker.Acquire(ctx, "billing-run", distlock.WithAutoExtend(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	defer ls.Release(ctx)
	select {
	case <-ls.Done(): // lost: stop acting as the owner
		log.Print(ls.Err())
	case <-time.After(time.Minute): // the work
	}
	fmt.Println("fence", ls.Fence())
}

// A write in etcd that applies only while the lock is held, checked by the
// etcd cluster itself: safe even if this process was paused past its lease.
func ExampleLocker_TxnIfHeld() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"10.0.0.1:2379", "10.0.0.2:2379", "10.0.0.3:2379"}})
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
