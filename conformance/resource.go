package conformance

import (
	"fmt"
	"sync"

	"github.com/distlock/distlock/fencing"
)

// resource is the resource-effect oracle: a register that holders read,
// sleep on, and write back incremented. A write that finds the register
// changed since its read is a lost update, which proves two holders were
// inside their sections at once. It needs no clock.
//
// A fenced resource also rejects writes whose fence is lower than the
// highest accepted (fencing.Register); a lost update it still accepts
// breaks FSAFE.
type resource struct {
	fenced bool
	reg    fencing.Register[int64] // the fenced resource's register

	mu       sync.Mutex
	value    int64    // the unfenced resource's register
	lost     []string // descriptions of lost updates
	rejected int      // stale writes refused by the fence check
	writes   int
}

func newResource(fenced bool) *resource { return &resource{fenced: fenced} }

func (r *resource) read() int64 {
	if !r.fenced {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.value
	}
	v, _ := r.reg.Read()
	return v
}

// write stores read+1 on behalf of client holding fence. It reports
// whether the write was applied.
func (r *resource) write(client int, fence uint64, read int64) bool {
	var applied bool
	lostLocked := func(cur int64) {
		if cur != read {
			r.lost = append(r.lost, fmt.Sprintf("client %d (fence %d) read %d but the register held %d at its write", client, fence, read, cur))
		}
	}
	apply := func(cur int64) int64 {
		applied = true
		r.mu.Lock()
		lostLocked(cur)
		r.mu.Unlock()
		return read + 1
	}
	if !r.fenced { // no fence check: every write lands
		r.mu.Lock()
		defer r.mu.Unlock()
		lostLocked(r.value)
		r.value = read + 1
		r.writes++
		return true
	}
	if err := r.reg.Update(fence, apply); err != nil {
		r.mu.Lock()
		r.rejected++
		r.mu.Unlock()
		return false
	}
	r.mu.Lock()
	r.writes++
	r.mu.Unlock()
	return applied
}

// lostUpdates returns the lost updates seen so far.
func (r *resource) lostUpdates() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lost...)
}

func (r *resource) stats() (writes, rejected int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes, r.rejected
}
