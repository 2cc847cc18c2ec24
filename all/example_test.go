package all_test

import (
	"context"
	"fmt"

	"github.com/distlock/distlock"
	_ "github.com/distlock/distlock/all" // registers every backend's schemes
)

// With package all imported, Open takes any backend's URL; mem:// is the
// in-process backend, the others need their servers.
func Example() {
	ctx := context.Background()
	locker, err := distlock.Open(ctx, "mem://all-example")
	if err != nil {
		panic(err)
	}
	defer locker.Close()
	fmt.Println(distlock.Schemes())

	lease, err := locker.Acquire(ctx, "reports/daily")
	if err != nil {
		panic(err)
	}
	fmt.Println("held", lease.Key(), "on", locker.Guarantees().Backend)
	_ = lease.Release(ctx)
	// Output:
	// [etcd mem migrate postgres postgresql redis redis+cluster redis+sentinel rediss rediss+cluster rediss+sentinel redlock zk]
	// held reports/daily on mem
}
