package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/retry"
)

// A Locker lets one call per key at a time talk to the nodes: the holder
// of that key's slot is either acquiring (queued on the nodes, or between
// attempts) or holding the lease. Other callers of the same Locker wait
// for the slot locally, in arrival order, and send nothing meanwhile; the
// slot passes to the next local caller when the lease ends (released or
// lost) or the acquiring call gives up. So N goroutines of one process on
// one hot key cost the servers what one does (benchmarks B3 and B7 at
// k=64 in docs/benchmarks.md), and a process's own callers are served
// first-come first-served.
//
// slots maps key -> the local callers waiting for the slot (nil or empty:
// the slot is taken, nobody waits). Guarded by the Locker's lifecycle mutex (Locker.lc.Lock).

// errLocallyHeld is TryAcquire's answer when another call of this Locker
// holds or is acquiring the key.
var errLocallyHeld = errors.New("held or being acquired by another call of this Locker")

// takeSlot waits for key's slot until ctx ends or the Locker closes.
func (l *Locker) takeSlot(ctx context.Context, key string) error {
	l.lc.Lock()
	q, taken := l.slots[key]
	if !taken {
		l.slots[key] = nil
		l.lc.Unlock()
		return nil
	}
	ch := make(chan struct{})
	l.slots[key] = append(q, ch)
	l.lc.Unlock()
	var err error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err = retry.Ended(ctx, fmt.Errorf("redlock: %q: waiting behind another call of this Locker", key))
	case <-l.lc.Closing().Done():
		err = distlock.ErrClosed
	}
	l.lc.Lock()
	select {
	case <-ch: // handed to us as we gave up: pass it on
		l.lc.Unlock()
		l.freeSlot(key)
		return err
	default:
	}
	q = l.slots[key]
	for i, c := range q {
		if c == ch {
			l.slots[key] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	l.lc.Unlock()
	return err
}

// tryTakeSlot takes key's slot if it is free.
func (l *Locker) tryTakeSlot(key string) bool {
	l.lc.Lock()
	defer l.lc.Unlock()
	if _, taken := l.slots[key]; taken {
		return false
	}
	l.slots[key] = nil
	return true
}

// freeSlot hands key's slot to the first local waiter, or frees it.
func (l *Locker) freeSlot(key string) {
	l.lc.Lock()
	defer l.lc.Unlock()
	q := l.slots[key]
	if len(q) == 0 {
		delete(l.slots, key)
		return
	}
	close(q[0])
	l.slots[key] = q[1:]
}
