package conformance

import "strings"

// fenceReport says what a backend's LockInfo.Fence holds for a held key,
// as its package documentation ("# Inspection") says.
type fenceReport int

const (
	fenceUnknown   fenceReport = iota // not documented: not judged
	fenceStored                       // the holder's lease.Fence()
	fenceSometimes                    // 0, or the holder's lease.Fence()
	fenceZero                         // always 0: the lock state keeps no fence
)

// inspectTraits is what a backend's documentation says its Inspector
// reports, for H4 to judge LockInfo by.
type inspectTraits struct {
	// holderIsToken: Holder is distlock.HolderID(lease.Token()); else
	// only a non-empty id that differs between holders present at once.
	holderIsToken bool
	fence         fenceReport
	// pushedLoss: ForceRelease tells the evicted lease itself (its Done
	// fires on the eviction: a revocation, a closed connection, a watch);
	// elsewhere the lease learns at its watchdog's next extension or at
	// the end of its validity.
	pushedLoss bool
	// idsOnly: the server keeps no key names; List names each lock by
	// the Locker's KeyID(key) in decimal.
	idsOnly bool
}

// inspectTraitsOf returns the traits of the backend named by
// Guarantees.Backend, each from the "# Inspection" section of that
// package's doc.go; ok is false for a backend H4 does not know, judged
// by the Inspector interface's own promises only.
func inspectTraitsOf(backend string) (tr inspectTraits, ok bool) {
	switch backend {
	case "mem": // memlock: fence, HolderID(token); ForceRelease is Revoke
		return inspectTraits{holderIsToken: true, fence: fenceStored, pushedLoss: true}, true
	case "redis": // redissingle: the fence only where the value carries it; the evicted lease is not told
		return inspectTraits{holderIsToken: true, fence: fenceSometimes}, true
	case "redlock": // redlock: Fence is 0; the evicted lease is not told
		return inspectTraits{holderIsToken: true, fence: fenceZero}, true
	case "postgres": // pgadvisory: Holder "pid:<pid>", Fence 0, List by id; Done fires as the session ends
		return inspectTraits{fence: fenceZero, pushedLoss: true, idsOnly: true}, true
	case "etcd": // etcdlock: fence = create revision; the holder learns at its next extension
		return inspectTraits{holderIsToken: true, fence: fenceStored}, true
	case "zookeeper": // zklock: czxid fence; the evicted lease's watch fires its Done
		return inspectTraits{holderIsToken: true, fence: fenceStored, pushedLoss: true}, true
	}
	return inspectTraits{}, false
}

// String says what the traits make H4 judge, for the detail.
func (tr inspectTraits) String() string {
	holder := "Holder non-empty"
	if tr.holderIsToken {
		holder = "Holder = HolderID(token)"
	}
	fence := map[fenceReport]string{fenceUnknown: "Fence not judged", fenceStored: "Fence = the lease's",
		fenceSometimes: "Fence 0 or the lease's", fenceZero: "Fence 0"}[tr.fence]
	loss := "the evicted lease told at its next extension or validity"
	if tr.pushedLoss {
		loss = "the evicted lease told by the eviction"
	}
	list := "List by key"
	if tr.idsOnly {
		list = "List by id"
	}
	return strings.Join([]string{holder, fence, loss, list}, ", ")
}
