package conformance

import (
	"context"
	"fmt"

	"github.com/distlock/distlock"
)

// URLHarness returns a Harness for a deployment you already run, reached
// by a Locker URL (see distlock.Open): it needs no Docker and no fault
// hooks. Use it to compare the guarantees of backends, or of your own
// configuration of one, in your own tests:
//
//	func TestMain(m *testing.M) { conformance.Main(m) }
//
//	func TestOurRedis(t *testing.T) {
//		conformance.Run(t, conformance.URLHarness("ours", os.Getenv("LOCK_URL")))
//	}
//
// The backend's package (or package all) must be imported so that its
// scheme is registered. Each client opens its own Locker from rawURL;
// worker processes (the test binary run again through Main) open it too,
// for the scenarios that pause or kill a holder, where the backend is
// shared between processes (Guarantees.CrossProcess). Revoke is
// distlock.ForceRelease where the backend is a distlock.Inspector. Every
// server and network fault scenario is reported "n/a": add Servers,
// Links and the other hooks to the returned Harness to run those. The
// lease TTL of the scenarios is the Harness default (1 s) unless TTL is
// set on the result; the URL's own ttl parameter, if any, is not used by
// the scenarios, which pass their own.
//
// rawURL is not validated here: a URL that does not open fails the first
// scenario with distlock.Open's error.
func URLHarness(name, rawURL string) Harness {
	return Harness{
		Name: name,
		NewLocker: func(ctx context.Context, _ string) (distlock.Locker, error) {
			return distlock.Open(ctx, rawURL)
		},
		URL: func(string) string { return rawURL },
		Revoke: func(ctx context.Context, key string) error {
			l, err := distlock.Open(ctx, rawURL)
			if err != nil {
				return err
			}
			defer l.Close()
			if _, err := distlock.ForceRelease(ctx, l, key); err != nil {
				return fmt.Errorf("conformance: revoke %q: %w", key, err)
			}
			return nil
		},
	}
}
