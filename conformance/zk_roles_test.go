package conformance_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/distlock/distlock/conformance"
	"github.com/distlock/distlock/testbed"
)

// zkRoles resolve the suite's servers to ensemble members by role when a
// fault starts: Servers[0] is whichever member leads at that moment,
// Servers[1] and [2] followers not taken by another role. So S13 kills
// the leader (forcing an election under a held lease), S14 and S15 hit
// the leader and a follower, S19 cuts off the leader and S36 a follower,
// and the all-server scenarios hit each member once. A role keeps its
// member until the fault is undone (Start, Unpause, a clock jump of 0,
// Rejoin).
type zkRoles struct {
	e     *testbed.ZooKeeperEnsemble
	mu    sync.Mutex
	roles []*zkRole // Servers order
}

type zkRole struct {
	r    *zkRoles
	name string
	i    int // index in Servers
	idx  int // the member while a fault is on; -1 otherwise
}

// zkLeaderWait bounds the wait for an elected leader when a role is
// resolved.
const zkLeaderWait = 30 * time.Second

func newZKRoles(e *testbed.ZooKeeperEnsemble) *zkRoles {
	r := &zkRoles{e: e}
	for i, name := range []string{"leader", "follower-a", "follower-b"} {
		r.roles = append(r.roles, &zkRole{r: r, name: name, i: i, idx: -1})
	}
	return r
}

func (r *zkRoles) servers() []conformance.Server {
	out := make([]conformance.Server, len(r.roles))
	for i, s := range r.roles {
		out[i] = s
	}
	return out
}

// assign maps every role to a member (r.mu held): a role with a fault on
// keeps its member; the leader role takes the leader (-1: none known);
// each follower role, in order, the first free member that does not lead,
// or else the last free one (a follower that was elected meanwhile).
func (r *zkRoles) assign(leader int) []int {
	out := make([]int, len(r.roles))
	taken := map[int]bool{}
	for i, s := range r.roles {
		out[i] = s.idx
		if s.idx >= 0 {
			taken[s.idx] = true
		}
	}
	if out[0] < 0 && leader >= 0 && !taken[leader] {
		out[0], taken[leader] = leader, true
	}
	for _, followersOnly := range []bool{true, false} {
		for i := 1; i < len(out); i++ {
			for m := range r.e.Nodes {
				if out[i] < 0 && !taken[m] && (!followersOnly || m != leader) {
					out[i], taken[m] = m, true
				}
			}
		}
	}
	return out
}

// leader waits until a member says it leads, for up to zkLeaderWait.
func (r *zkRoles) leader(ctx context.Context) (int, error) {
	deadline := time.Now().Add(zkLeaderWait)
	for {
		ld, err := r.e.Leader(ctx)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return ld, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// members resolves every role to a member without claiming any: the
// order of ServerLinks.
func (r *zkRoles) members(ctx context.Context) ([]int, error) {
	ld, err := r.leader(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.assign(ld)
	if err != nil && out[0] < 0 {
		return nil, err
	}
	return out, nil
}

// leaderRole is the index of the role whose member leads now (Leader).
func (r *zkRoles) leaderRole(ctx context.Context) (int, error) {
	ld, err := r.leader(ctx)
	if err != nil {
		return -1, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, m := range r.assign(ld) {
		if m == ld {
			return i, nil
		}
	}
	return -1, fmt.Errorf("leader %d is taken by no role", ld)
}

// pick finds the member for a role and claims it. Only the leader role,
// or the first fault of all, waits for an elected leader; a follower
// role after another role's fault takes what is free (an election may be
// under way).
func (s *zkRole) pick(ctx context.Context) (*testbed.ZooKeeperNode, error) {
	s.r.mu.Lock()
	if s.idx >= 0 {
		defer s.r.mu.Unlock()
		return s.r.e.Nodes[s.idx], nil
	}
	wait := s.i == 0 || !s.r.anyClaimed()
	s.r.mu.Unlock()
	ld, err := -1, error(nil)
	if wait {
		ld, err = s.r.leader(ctx)
	} else {
		ld, _ = s.r.e.Leader(ctx)
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	m := s.r.assign(ld)[s.i]
	if m < 0 {
		return nil, fmt.Errorf("no member for role %s (leader %d: %v)", s.name, ld, err)
	}
	s.idx = m
	return s.r.e.Nodes[m], nil
}

// anyClaimed reports whether a role has a fault on (r.mu held).
func (r *zkRoles) anyClaimed() bool {
	for _, s := range r.roles {
		if s.idx >= 0 {
			return true
		}
	}
	return false
}

func (s *zkRole) done() {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.idx = -1
}

func (s *zkRole) current() (*testbed.ZooKeeperNode, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.idx < 0 {
		return nil, fmt.Errorf("role %s: no fault to undo", s.name)
	}
	return s.r.e.Nodes[s.idx], nil
}

func (s *zkRole) Name() string {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.idx >= 0 {
		return s.name + "(" + s.r.e.Nodes[s.idx].Name() + ")"
	}
	return s.name
}

func (s *zkRole) Kill(ctx context.Context) error {
	n, err := s.pick(ctx)
	if err != nil {
		return err
	}
	return n.Kill(ctx)
}

func (s *zkRole) Pause(ctx context.Context) error {
	n, err := s.pick(ctx)
	if err != nil {
		return err
	}
	return n.Pause(ctx)
}

func (s *zkRole) Start(ctx context.Context) error {
	n, err := s.current()
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return err // keep the member: the scenario's clean-up tries again
	}
	s.done()
	return nil
}

func (s *zkRole) Unpause(ctx context.Context) error {
	n, err := s.current()
	if err != nil {
		return err
	}
	if err := n.Unpause(ctx); err != nil {
		return err // keep the member: the scenario's clean-up tries again
	}
	s.done()
	return nil
}

func (s *zkRole) clockJump(ctx context.Context, d time.Duration) error {
	if d == 0 {
		n, err := s.current()
		if err != nil {
			return err
		}
		defer s.done()
		return n.ClockJump(ctx, 0)
	}
	n, err := s.pick(ctx)
	if err != nil {
		return err
	}
	return n.ClockJump(ctx, d)
}

// isolate cuts the role's member off from the other members at the packet
// level, while its clients' links stay up; rejoin heals it.
func (s *zkRole) isolate(ctx context.Context) error {
	n, err := s.pick(ctx)
	if err != nil {
		return err
	}
	for _, o := range s.r.e.Nodes {
		if o != n {
			if err := n.CutPeer(ctx, o.Node); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *zkRole) rejoin(ctx context.Context) error {
	n, err := s.current()
	if err != nil {
		return err
	}
	for _, o := range s.r.e.Nodes {
		if o != n {
			if err := n.HealPeer(ctx, o.Node); err != nil {
				return err // keep the member: the scenario's clean-up tries again
			}
		}
	}
	s.done()
	return nil
}

// serverLinks orders client's links to the members (in member order) as
// the roles resolve now; if no leader can be found they stay in member
// order, and the scenario's own leader check fails.
func (r *zkRoles) serverLinks(ctx context.Context, perMember []conformance.Link) []conformance.Link {
	ms, err := r.members(ctx)
	if err != nil {
		return perMember
	}
	out := make([]conformance.Link, len(ms))
	for i, m := range ms {
		out[i] = perMember[m]
	}
	return out
}
