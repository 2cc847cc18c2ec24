package fencing

import (
	"fmt"
	"sync"
)

// Pair is a fence issued while a fleet migrates between two lock
// backends (package migrate): From is the old backend's fence, To the new
// one's, 0 where the lease does not hold that backend's lock with
// exclusion. A pair with both 0 is never issued.
//
// The two backends' fences are not comparable with each other, so a
// resource keeps the highest of each side apart and admits a write only
// if each side it carries is at least that side's highest. Two clients
// in adjacent migration phases always share one side (the lock they both
// wait for), and that side strictly increases across their holds, so an
// earlier holder's write can never land after a later holder's.
type Pair struct{ From, To uint64 }

// String formats the pair as "from=F,to=T", leaving out a side that is 0.
func (p Pair) String() string {
	switch {
	case p.To == 0:
		return fmt.Sprintf("from=%d", p.From)
	case p.From == 0:
		return fmt.Sprintf("to=%d", p.To)
	}
	return fmt.Sprintf("from=%d,to=%d", p.From, p.To)
}

// admits reports whether p may be applied over the highest sides h, and
// returns the new highest sides.
func (p Pair) admits(h Pair) (Pair, bool) {
	if p == (Pair{}) || (p.From != 0 && p.From < h.From) || (p.To != 0 && p.To < h.To) {
		return h, false
	}
	return Pair{From: max(p.From, h.From), To: max(p.To, h.To)}, true
}

// StalePairError reports a write refused by a PairGuard or PairRegister;
// it matches ErrStaleFence.
type StalePairError struct {
	Key     string // empty for a PairRegister
	Pair    Pair   // the pair the write carried
	Highest Pair   // the highest of each side accepted before it
}

// Error names the refused pair and the highest sides accepted.
func (e *StalePairError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("fencing: stale fence pair %v, highest accepted %v", e.Pair, e.Highest)
	}
	return fmt.Sprintf("fencing: stale fence pair %v for %q, highest accepted %v", e.Pair, e.Key, e.Highest)
}

// Unwrap makes errors.Is(err, ErrStaleFence) true.
func (e *StalePairError) Unwrap() error { return ErrStaleFence }

// PairRegister is Register for fence pairs: an in-memory register holding
// one value, written only with a pair that is not stale. The zero value
// is ready to use; it is safe for concurrent use.
type PairRegister[T any] struct {
	mu      sync.Mutex
	highest Pair
	value   T
}

// Seed starts the From side at from: the highest single fence a
// Register or Guard had accepted from the old backend's leases before
// the resource switched to pairs. It never lowers a side.
func (r *PairRegister[T]) Seed(from uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.highest.From = max(r.highest.From, from)
}

// Update applies f to the value under the register's lock if p is not
// stale, and returns a *StalePairError (matching ErrStaleFence) without
// calling f otherwise; the zero Pair is always stale.
func (r *PairRegister[T]) Update(p Pair, f func(T) T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := p.admits(r.highest)
	if !ok {
		return &StalePairError{Pair: p, Highest: r.highest}
	}
	r.highest, r.value = h, f(r.value)
	return nil
}

// Write stores v if p is not stale (see Update).
func (r *PairRegister[T]) Write(p Pair, v T) error {
	return r.Update(p, func(T) T { return v })
}

// Read returns the value and the highest sides accepted.
func (r *PairRegister[T]) Read() (T, Pair) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.highest
}

// PairGuard is Guard for fence pairs: the highest sides admitted, per
// key. The zero value is ready to use; it is safe for concurrent use.
type PairGuard struct {
	mu      sync.Mutex
	highest map[string]Pair
}

// Admit records p for key if it is not stale, and returns a
// *StalePairError (matching ErrStaleFence) otherwise (always for the zero
// Pair). Call it in the same critical section as the write it protects.
func (g *PairGuard) Admit(key string, p Pair) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.highest == nil {
		g.highest = map[string]Pair{}
	}
	h, ok := p.admits(g.highest[key])
	if !ok {
		return &StalePairError{Key: key, Pair: p, Highest: g.highest[key]}
	}
	g.highest[key] = h
	return nil
}

// Seed starts key's From side at from (see PairRegister.Seed).
func (g *PairGuard) Seed(key string, from uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.highest == nil {
		g.highest = map[string]Pair{}
	}
	h := g.highest[key]
	h.From = max(h.From, from)
	g.highest[key] = h
}

// Highest returns the highest sides admitted for key.
func (g *PairGuard) Highest(key string) Pair {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.highest[key]
}
