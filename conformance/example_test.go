package conformance_test

import (
	"fmt"

	"github.com/distlock/distlock/conformance"
)

// URLHarness adapts a deployment you already run: the suite then runs
// every scenario that needs no fault hook (conformance.Run in a test, with
// conformance.Main in the test binary's TestMain).
func ExampleURLHarness() {
	h := conformance.URLHarness("staging", "redis://redis.staging.internal:6379/0")
	fmt.Println(h.Name, h.URL("any client"), h.Servers == nil)
	// Output: staging redis://redis.staging.internal:6379/0 true
}
