package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/distlock/distlock"
)

// hangGrace is how long after its context ended a call may take to return
// before a scenario calls it hung and stops waiting for it.
const hangGrace = 2 * time.Second

// callResult is how one bounded call to a Locker or Lease ended.
type callResult struct {
	err        error
	call, ret  int64 // unix nanos around the call
	took       time.Duration
	panicValue any  // what the call panicked with (nil: it did not)
	hung       bool // still running hangGrace after its context ended
}

// boundedCall runs f with a context that ends after d, in a goroutine of
// its own so that a panic is recovered and a call that ignores its
// context is abandoned (left running) instead of wedging the scenario.
func boundedCall(parent context.Context, d time.Duration, f func(ctx context.Context) error) callResult {
	ctx, cancel := context.WithTimeout(parent, d)
	defer cancel()
	done := make(chan callResult, 1)
	call := time.Now()
	go func() { // owned: ends with f; abandoned (reported hung) if f never returns
		res := callResult{call: call.UnixNano()}
		defer func() {
			if p := recover(); p != nil {
				res.panicValue, res.err = p, fmt.Errorf("panic: %v", p)
			}
			res.ret = time.Now().UnixNano()
			res.took = time.Since(call)
			done <- res
		}()
		res.err = f(ctx)
	}()
	t := time.NewTimer(d + hangGrace)
	defer t.Stop()
	select {
	case res := <-done:
		return res
	case <-t.C:
		return callResult{call: call.UnixNano(), ret: time.Now().UnixNano(), took: time.Since(call), hung: true,
			err: fmt.Errorf("call still running %v after its %v context ended", hangGrace, d)}
	}
}

// refusal reports whether r is a refusal of a bad argument: an error
// matching distlock.ErrInvalidArgument and not distlock.ErrUnavailable.
func (r callResult) refusal() bool {
	return r.err != nil && errors.Is(r.err, distlock.ErrInvalidArgument) && !errors.Is(r.err, distlock.ErrUnavailable)
}

// notAcquired reports whether r is a plain "held by someone else" (or
// "context ended while waiting"): ErrNotAcquired without ErrUnavailable.
func (r callResult) notAcquired() bool {
	return r.err != nil && errors.Is(r.err, distlock.ErrNotAcquired) && !errors.Is(r.err, distlock.ErrUnavailable)
}

// waitEnded reports whether r is how a blocking Acquire on a key held by
// someone else ends: ErrNotAcquired, either plain or with the context's
// deadline (then it may keep the last backend error, even ErrUnavailable).
func (r callResult) waitEnded() bool {
	return r.notAcquired() || (errors.Is(r.err, distlock.ErrNotAcquired) && errors.Is(r.err, context.DeadlineExceeded))
}

// String describes the outcome for a failure message, errors cut short.
func (r callResult) String() string {
	switch {
	case r.panicValue != nil:
		return fmt.Sprintf("panicked: %s", cut(fmt.Sprint(r.panicValue), 200))
	case r.hung:
		return "hung: " + r.err.Error()
	case r.err == nil:
		return fmt.Sprintf("succeeded after %v", r.took.Round(time.Millisecond))
	}
	return fmt.Sprintf("returned after %v: %s", r.took.Round(time.Millisecond), cut(r.err.Error(), 200))
}

// cut shortens s to about n bytes, keeping both ends (an error that
// quotes a long key keeps its cause), marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := n * 2 / 3
	return s[:head] + fmt.Sprintf(" [%d bytes cut] ", len(s)-n) + s[len(s)-(n-head):]
}
