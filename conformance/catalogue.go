package conformance

import "github.com/distlock/distlock"

// catalogue is the scenario list (docs/conformance.md). Each expectation is
// derived from the backend's Guarantees, never from its name, so a backend
// that promises more is held to more.
var catalogue = []scenario{
	{"S01", "10 clients contend on one key", "ME FENCE NR DF AV", always, s01},
	{"S02", "holder works 3xTTL with auto-extend", "ME, no false LN", always, s02},
	{"S03", "holder stalls past TTL, B acquires, A releases", "NR", always, s03},
	{"S04", "extend after expiry (B acquired and released)", "NR AV", always, s04},
	{"S05", "old release retried after the owner re-acquired", "NR", always, s05},
	{"S06", "two holders share one Locker", "ME", always, s06},
	{"S07", "holder process SIGKILLed", "DF", func(g distlock.Guarantees, h *Harness) expectation {
		if exp, ok := needsProcesses(g, h); !ok {
			return exp
		}
		return holds()
	}, s07},
	{"S08", "holder process paused 3xTTL, unfenced resource", "ME", func(g distlock.Guarantees, h *Harness) expectation {
		if exp, ok := needsProcesses(g, h); !ok {
			return exp
		}
		if !g.ClockIndependentSafety {
			return breaks("TTL-based: a paused holder outlives its lease")
		}
		return holds()
	}, s08},
	{"S09", "holder process paused 3xTTL, fenced resource", "FSAFE", func(g distlock.Guarantees, h *Harness) expectation {
		if exp, ok := needsProcesses(g, h); !ok {
			return exp
		}
		if g.Fence == distlock.FenceNone {
			return breaks("no ordered fences")
		}
		return holds()
	}, s09},
	{"S10", "client stalls between sending acquire and reading replies", "AV", func(g distlock.Guarantees, h *Harness) expectation {
		return needsLinks(g, h)
	}, s10},
	{"S11", "holder black-holed from servers for 3xTTL", "LN ME DF", func(g distlock.Guarantees, h *Harness) expectation {
		if exp := needsLinks(g, h); exp.kind != "holds" {
			return exp
		}
		if !g.LostNotification {
			return breaks("no lost-lease notification")
		}
		return holds()
	}, s11},
	{"S12", "client wall-clock jump ±1h", "AV ME", expectS12, s12},
	{"S13", "tolerated minority of servers killed", "FT", needsServers(minority, func(distlock.Guarantees) expectation { return holds() }), s13},
	{"S14", "majority / primary killed", "no grant; recovery", needsServers(majority, func(distlock.Guarantees) expectation { return holds() }), s14},
	{"S15", "primary / leader frozen 2xTTL (no failover)", "ME LN FT", needsServers(majority, func(g distlock.Guarantees) expectation {
		if !g.LostNotification {
			return breaks("no lost-lease notification")
		}
		return holds()
	}), s15},
	{"S16", "a server of the holder's majority restarted without durable state", "ME", needsServers(majority, func(g distlock.Guarantees) expectation {
		return restartExpectation(g)
	}), s16},
	{"S17", "holder has exactly 3/5; one restarts empty; B locks it plus 2 others", "ME", func(g distlock.Guarantees, h *Harness) expectation {
		if h.ServerLinks == nil || len(h.Servers) != 5 || len(h.Majority) != 3 {
			return notApplicable("needs 5 servers and per-server client links")
		}
		if !g.SurvivesRestart {
			return breaks("a node restarted empty forgets the holder")
		}
		return holds()
	}, bareMajorityRestart},
	{"S18", "async replica promoted before the lock replicated", "ME FENCE", func(g distlock.Guarantees, h *Harness) expectation {
		if h.Failover == nil || h.PrepareFailover == nil {
			return notApplicable("needs a replica to fail over to")
		}
		if !g.FailoverSafe {
			return breaks("replication is asynchronous")
		}
		return holds()
	}, s18},
	{"S19", "old primary partitioned with a client; failover; heal", "ME", expectS19, s19},
	{"S20", "one server's clock jumps +2xTTL", "ME", expectS20, s20},
	{"S21", "server clock slows or jumps back", "DF", expectS21, s21},
	{"S22", "latency >= TTL on the acquire path", "AV", func(g distlock.Guarantees, h *Harness) expectation {
		return needsLinks(g, h)
	}, s22},
	{"S23", "whole cluster restarted while held", "ME DF", needsServers(everyServer, func(g distlock.Guarantees) expectation {
		return restartExpectation(g)
	}), s23},
	{"S24", "split vote: 5 clients each reach <= 2 nodes first", "DF, no partial keys left", func(_ distlock.Guarantees, h *Harness) expectation {
		if h.ServerLinks == nil || len(h.Servers) < 5 || h.Holders == nil {
			return notApplicable("needs 5 servers, per-server client links and a key probe")
		}
		return holds()
	}, s24},
	{"S25", "herd: 50 waiters on one key", "DF ME, commands per hand-off", func(distlock.Guarantees, *Harness) expectation { return measure() }, s25},
	{"S26", "a queued waiter's session expires", "ME", expectS26, s26},
	{"S27", "the acquire reached the server but its reply was lost", "DF ME", func(g distlock.Guarantees, h *Harness) expectation {
		return needsLinks(g, h)
	}, s27},
	{"S28", "session lock through a transaction-pooling proxy", "ME DF", expectS28, s28},
	{"S29", "advisory lock on an unpinned pooled connection", "ME DF", expectS29, s29},
	{"S30", "key derivation stable across processes and builds", "ME DF", expectS30, s30},
	{"S31", "fence monotonic across a restart of every server", "FENCE", needsServers(everyServer, func(g distlock.Guarantees) expectation {
		if g.Fence != distlock.FenceDurable {
			return breaks("fences are not durable")
		}
		return holds()
	}), s31},
	{"S32", "guarded write inside the coordinator while the holder is paused", "FSAFE", expectS32, s32},
	{"S33", "lease revoked by an operator while held", "LN latency", func(_ distlock.Guarantees, h *Harness) expectation {
		if h.Revoke == nil {
			return notApplicable("needs a revocation hook")
		}
		return measure()
	}, s33},
	{"S34", "hostile keys: reserved names, prefixes, separators, NUL, non-UTF-8, 1 MiB", "ME, independent keys, refusal", always, s34},
	{"S35", "holder stops right after acquiring; next holder after its lease ends", "FENCE", expectS35, s35},
	{"S36", "follower partitioned with a client pinned to it; the majority grants the key", "ME LN", expectS36, s36},
}

// restartExpectation: a restart keeps exclusion if the lock state survives
// it, or if the lock lives and dies with the holder's connection and the
// holder is told when it drops (a Postgres session lock: the restart ends
// the lease before anyone else can be granted the key).
func restartExpectation(g distlock.Guarantees) expectation {
	if g.SurvivesRestart || (g.ReleasedOnCrash && g.LostNotification) {
		return holds()
	}
	return breaks("lock state is not durable across a restart")
}
