package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/pgadvisory"
)

const (
	pgB1Ops    = 3000
	pgB1Rounds = 6
)

// BenchmarkPGB1Uncontended: one client, one key at a time, acquire then
// release: our TryAcquire + Release (pinned connection, fence from the
// sequence, TTL set on the session, monitor goroutine) against the raw
// pg_advisory_lock + pg_advisory_unlock pair on a held pgx connection,
// interleaved: each of pgB1Ops iterations of a round runs every
// implementation once, in rotating order. It reports the median over
// pgB1Rounds rounds of each one's mean per-pair time (us) and ours/raw;
// raw+nextval adds the fence to the raw lock statement, to show what
// durability costs. Run with -benchtime=1x.
func BenchmarkPGB1Uncontended(b *testing.B) {
	s := startPG(b)
	ours := s.locker(b, nil)
	// raw and raw+nextval each on a connection of its own: interleaved,
	// a shared one would serve two operations in three and stay warmer
	// than ours, which serves one in three.
	raw, rawF := s.rawConn(b), s.rawConn(b)
	ctx := context.Background()
	impls := []pgB1Impl{
		{"ours", func(key string) error {
			ls, err := ours.TryAcquire(ctx, key)
			if err != nil {
				return err
			}
			return ls.Release(ctx)
		}},
		{"raw", func(key string) error {
			id := pgadvisory.KeyID(pgadvisory.DefaultNamespace, key)
			if _, err := raw.Exec(ctx, "SELECT pg_advisory_lock($1)", id); err != nil {
				return err
			}
			_, err := raw.Exec(ctx, "SELECT pg_advisory_unlock($1)", id)
			return err
		}},
		// The raw pair plus a durable fence from the same sequence in the
		// lock statement: what the fence alone costs (a logged nextval
		// flushes the WAL once every 32 values).
		{"raw+nextval", func(key string) error {
			id := pgadvisory.KeyID(pgadvisory.DefaultNamespace, key)
			if _, err := rawF.Exec(ctx, "SELECT nextval('distlock_fence') FROM pg_advisory_lock($1)", id); err != nil {
				return err
			}
			_, err := rawF.Exec(ctx, "SELECT pg_advisory_unlock($1)", id)
			return err
		}},
	}
	for _, im := range impls { // warm up connections and statements
		for i := range 300 {
			if err := im.op(fmt.Sprintf("pgb1:warm:%s:%d", im.name, i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Interleaved: every iteration runs each implementation once, in
	// rotating order, so that all three see the same machine state (on 2
	// shared cores, whether the client and the server process share a core
	// moves a pair's time by tens of percent from one moment to the next).
	// Each round's mean per pair is recorded; the medians of the rounds
	// are reported.
	us := map[string][]float64{}
	b.ResetTimer()
	for range b.N {
		for range pgB1Rounds {
			pgB1Round(b, impls, us)
		}
	}
	b.StopTimer()
	o, r, rf := median(us["ours"]), median(us["raw"]), median(us["raw+nextval"])
	b.ReportMetric(o, "ours-us")
	b.ReportMetric(r, "raw-us")
	b.ReportMetric(rf, "raw+nextval-us")
	b.ReportMetric(o/r, "ours/raw")
	b.ReportMetric(o/rf, "ours/raw+nextval")
	b.ReportMetric(float64(s.sessions(b, "distlock")), "ours-conns")
	b.Logf("rounds: ours %v, raw %v, raw+nextval %v", us["ours"], us["raw"], us["raw+nextval"])
}

// pgB1Impl is one acquire-then-release implementation measured by B1.
type pgB1Impl struct {
	name string
	op   func(key string) error
}

// pgB1Round runs pgB1Ops interleaved iterations of impls and appends each
// one's mean per-pair time (us) to us[name].
func pgB1Round(b *testing.B, impls []pgB1Impl, us map[string][]float64) {
	spent := make([]time.Duration, len(impls))
	for j := range pgB1Ops {
		for i := range impls {
			k := (i + j) % len(impls)
			im := impls[k]
			start := time.Now()
			if err := im.op(fmt.Sprintf("pgb1:%s:%d", im.name, j%16)); err != nil {
				b.Fatalf("%s: %v", im.name, err)
			}
			spent[k] += time.Since(start)
		}
	}
	for k, im := range impls {
		us[im.name] = append(us[im.name], float64(spent[k].Microseconds())/pgB1Ops)
	}
}
