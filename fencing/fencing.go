// Package fencing is the resource side of fencing tokens: a protected
// resource remembers the highest fence it has accepted and rejects writes
// that carry a lower one, so a holder that was paused or cut off past its
// lease cannot overwrite the work of the holder that came after it.
//
// A fence is Lease.Fence(). Whether fences increase across holders is a
// property of the backend: see distlock.Guarantees.Fence.
package fencing

import (
	"errors"
	"fmt"
	"sync"
)

// ErrStaleFence: a write carried a fence lower than one already accepted.
var ErrStaleFence = errors.New("fencing: stale fence")

// StaleFenceError reports a rejected write; it matches ErrStaleFence.
type StaleFenceError struct {
	Key     string // empty for a Register
	Fence   uint64 // the fence the write carried
	Highest uint64 // the highest fence accepted before it
}

// Error says which fence was refused and the highest accepted.
func (e *StaleFenceError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("fencing: stale fence %d, highest accepted %d", e.Fence, e.Highest)
	}
	return fmt.Sprintf("fencing: stale fence %d for %q, highest accepted %d", e.Fence, e.Key, e.Highest)
}

// Unwrap makes errors.Is(err, ErrStaleFence) true.
func (e *StaleFenceError) Unwrap() error { return ErrStaleFence }

// Register is an in-memory fenced register holding one value. A write is
// applied only if its fence is at least the highest accepted so far (the
// same holder may write several times with its fence). The zero value is
// an empty register ready to use; it is safe for concurrent use.
type Register[T any] struct {
	mu      sync.Mutex
	highest uint64
	value   T
}

// Write stores v if fence >= the highest fence accepted so far, and
// returns a *StaleFenceError (matching ErrStaleFence) otherwise. Fence 0
// is never issued by a Lease (it is what an unset fence reads as) and is
// always rejected.
func (r *Register[T]) Write(fence uint64, v T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fence == 0 || fence < r.highest {
		return &StaleFenceError{Fence: fence, Highest: r.highest}
	}
	r.highest, r.value = fence, v
	return nil
}

// Update applies f to the current value under the register's lock if fence
// is not stale: a read-modify-write that a stale holder cannot complete.
// A stale fence, or 0, returns a *StaleFenceError (matching ErrStaleFence)
// and does not call f.
func (r *Register[T]) Update(fence uint64, f func(T) T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fence == 0 || fence < r.highest {
		return &StaleFenceError{Fence: fence, Highest: r.highest}
	}
	r.highest, r.value = fence, f(r.value)
	return nil
}

// Read returns the value and the highest fence accepted (the zero value
// and 0 before the first write).
func (r *Register[T]) Read() (T, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.highest
}

// Guard tracks the highest accepted fence per key, for resources that
// protect many keys. The zero value is ready to use; it is safe for
// concurrent use. Memory grows with the number of distinct keys.
type Guard struct {
	mu      sync.Mutex
	highest map[string]uint64
}

// Admit records fence for key if it is at least the highest seen for key,
// and returns a *StaleFenceError otherwise (always for fence 0, which no
// Lease issues). Call it in the same critical section as the write it
// protects.
func (g *Guard) Admit(key string, fence uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.highest == nil {
		g.highest = map[string]uint64{}
	}
	if h := g.highest[key]; fence == 0 || fence < h {
		return &StaleFenceError{Key: key, Fence: fence, Highest: h}
	}
	g.highest[key] = fence
	return nil
}

// Highest returns the highest fence admitted for key (0 if none).
func (g *Guard) Highest(key string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.highest[key]
}
