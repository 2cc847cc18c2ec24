package leader

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock"
)

// Leader is the current leader of an election key as another process sees
// it (Observe).
type Leader struct {
	// Elected reports whether some candidate leads now.
	Elected bool
	// Identity is what the leader published with WithIdentity; "" when
	// none leads, it published none, or the backend does not store labels.
	Identity string
	// Fence is the leader's Term.Fence where the backend keeps fences in
	// its lock state; 0 elsewhere.
	Fence uint64
	// Holder is the backend's holder id of the leader's lease
	// (distlock.LockInfo.Holder): the token's id, new with every term,
	// where the backend stores tokens; on Postgres the holding session's
	// pid, which a pooled session keeps across terms.
	Holder string
	// TTL is the time the leader's lease has left as the server sees it,
	// 0 where the lease lives as long as a session (see
	// distlock.LockInfo.TTL).
	TTL time.Duration
}

// Observe reports who leads the election for key, read once from the
// backend through distlock.Inspect; a process that is not a candidate can
// call it, with any Locker on the same backend and configuration as the
// candidates'. Poll it to follow leadership; a Candidate learns of its own
// changes through WithObserver instead. A Locker that does not implement
// distlock.Inspector returns an error matching distlock.ErrNotSupported;
// other errors are Inspect's (ErrInvalidArgument for an empty key,
// ErrClosed, ErrUnavailable).
func Observe(ctx context.Context, l distlock.Locker, key string) (Leader, error) {
	info, err := distlock.Inspect(ctx, l, key)
	if err != nil {
		return Leader{}, fmt.Errorf("leader: observe %q: %w", key, err)
	}
	if !info.Held {
		return Leader{}, nil
	}
	return Leader{Elected: true, Identity: info.Label, Fence: info.Fence, Holder: info.Holder, TTL: info.TTL}, nil
}
