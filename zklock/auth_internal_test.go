package zklock

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
)

// TestRefusedNeedAuthEndsOnSuccess: after a server required
// authentication of a Locker without credentials, its lost connections
// and missing servers are reported as refusals (distlock.ErrAccessDenied)
// until a request succeeds; after that they are outages again
// (distlock.ErrUnavailable only), such as a server restarting after it
// stopped enforcing authentication.
func TestRefusedNeedAuthEndsOnSuccess(t *testing.T) {
	l := &Locker{}
	lost := []error{zk.ErrConnectionClosed, zk.ErrNoServer}
	for _, err := range lost {
		if got := l.refused(err); errors.Is(got, distlock.ErrAccessDenied) {
			t.Fatalf("%v before any refusal: %v matches ErrAccessDenied", err, got)
		}
	}
	requires := fmt.Errorf("zk: %w", errors.New(errSessionRequiresAuth))
	if got := l.refused(requires); !errors.Is(got, distlock.ErrAccessDenied) {
		t.Fatalf("SESSIONCLOSEDREQUIRESASLAUTH: %v does not match ErrAccessDenied", got)
	}
	for _, err := range lost {
		if got := l.refused(err); !errors.Is(got, distlock.ErrAccessDenied) || !errors.Is(got, distlock.ErrUnavailable) {
			t.Fatalf("%v after the server required authentication: %v, want ErrAccessDenied", err, got)
		}
	}
	if got := l.refused(nil); got != nil {
		t.Fatalf("refused(nil) = %v", got)
	}
	for _, err := range lost {
		if got := l.refused(err); errors.Is(got, distlock.ErrAccessDenied) || !errors.Is(got, err) {
			t.Fatalf("%v after a request succeeded: %v, want it unchanged, not ErrAccessDenied", err, got)
		}
	}
	// A Locker with credentials never reports a lost connection so.
	c := &Locker{opts: Options{Username: "app", Password: "pw"}}
	_ = c.refused(requires)
	if got := c.refused(zk.ErrConnectionClosed); errors.Is(got, distlock.ErrAccessDenied) {
		t.Fatalf("Locker with credentials: %v matches ErrAccessDenied", got)
	}
}
