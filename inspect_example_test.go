package distlock_test

import (
	"context"
	"fmt"

	"github.com/distlock/distlock"
)

// An operator looks at a key, lists the locks under a prefix and frees a
// key whose holder is stuck.
func ExampleInspect() {
	ctx := context.Background()
	locker, err := distlock.Open(ctx, "mem://example-inspect")
	if err != nil {
		panic(err)
	}
	defer locker.Close()
	lease, _ := locker.TryAcquire(ctx, "jobs/7", distlock.WithLabel("worker-3"))

	info, _ := distlock.Inspect(ctx, locker, "jobs/7")
	fmt.Println(info.Held, info.Label, info.Fence, info.Holder == distlock.HolderID(lease.Token()))

	page, _ := distlock.List(ctx, locker, "jobs/", distlock.Page{Limit: 10})
	for _, l := range page.Locks {
		fmt.Println("listed:", l.Key)
	}

	freed, _ := distlock.ForceRelease(ctx, locker, "jobs/7")
	<-lease.Done()
	fmt.Println("freed:", freed, "holder told:", lease.Err() != nil)
	// Output:
	// true worker-3 1 true
	// listed: jobs/7
	// freed: true holder told: true
}
