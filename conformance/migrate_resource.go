package conformance

import (
	"fmt"
	"sync"

	"github.com/distlock/distlock/fencing"
)

// pairResource is the fenced register of the migration scenarios: a
// fencing.PairRegister that holders read, sleep on, and write back
// incremented with their lease's fence pair (migrate.Fences). A write it
// accepts over a value changed since its read is a stale write let
// through (FSAFE broken across the roll); a write it refuses from a
// holder that believed it still held the lease is counted apart, since in
// a fleet of adjacent phases with healthy servers none may be refused.
type pairResource struct {
	reg fencing.PairRegister[int64]

	mu       sync.Mutex
	accepted []string // stale writes the register let through
	refused  []string // writes the register refused
	writes   int
}

func (r *pairResource) read() int64 {
	v, _ := r.reg.Read()
	return v
}

// write stores read+1 on behalf of client holding pair.
func (r *pairResource) write(client int, pair fencing.Pair, read int64) {
	err := r.reg.Update(pair, func(cur int64) int64 {
		if cur != read {
			r.mu.Lock()
			r.accepted = append(r.accepted, fmt.Sprintf("client %d (fences %v) read %d but the register held %d at its write", client, pair, read, cur))
			r.mu.Unlock()
		}
		return read + 1
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.refused = append(r.refused, fmt.Sprintf("client %d: %v", client, err))
		return
	}
	r.writes++
}

// stats returns the writes applied, the stale writes let through and the
// writes refused.
func (r *pairResource) stats() (writes int, accepted, refused []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes, append([]string(nil), r.accepted...), append([]string(nil), r.refused...)
}
