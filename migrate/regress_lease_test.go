package migrate_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	"github.com/distlock/distlock/migrate"
)

// TestExtendAfterNewSideLost: Extend of a both lease lost on the new side
// (the library released the old side) returns ErrLeaseLost.
func TestExtendAfterNewSideLost(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	ls := locktest.MustAcquire(t, f.client(migrate.PhaseBoth), key, distlock.WithTTL(time.Minute))
	f.to.Revoke(key)
	<-ls.Done()
	locktest.WantErr(t, ls.Err(), distlock.ErrLeaseLost)
	err := ls.Extend(t.Context(), time.Minute)
	t.Logf("Extend after loss on new side: %v", err)
	if !errors.Is(err, distlock.ErrLeaseLost) {
		t.Fatalf("Extend of a lost lease = %v; want ErrLeaseLost (ErrReleased=%v)", err, errors.Is(err, distlock.ErrReleased))
	}
}

// TestCloseBlockedByRetryDelay: Close wakes a both Acquire sleeping in its
// retry delay.
func TestCloseBlockedByRetryDelay(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	other := locktest.MustAcquire(t, f.to, key) // the new lock busy
	defer locktest.MustRelease(t, other)
	l := f.client(migrate.PhaseBoth)
	errc := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background(), key, distlock.WithTTL(30*time.Millisecond), distlock.WithRetryDelay(8*time.Second, 8*time.Second))
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond) // first wait cut, now in the retry delay
	start := time.Now()
	_ = l.Close()
	d := time.Since(start)
	err := <-errc
	t.Logf("Close took %v; Acquire returned %v", d, err)
	if d > time.Second {
		t.Fatalf("Close blocked %v behind a PhaseBoth retry delay", d)
	}
}

// TestDoneAfterClose: after Close, a both lease's Done still closes once
// its validity has passed, as the backends' own leases do.
func TestDoneAfterClose(t *testing.T) {
	f := newFleet(t)
	key := locktest.UniqueKey(t)
	l := f.client(migrate.PhaseBoth)
	ls := locktest.MustAcquire(t, l, key, distlock.WithTTL(100*time.Millisecond))
	single := locktest.MustAcquire(t, f.client(migrate.PhaseFrom), key+"x", distlock.WithTTL(100*time.Millisecond))
	_ = l.Close()
	time.Sleep(500 * time.Millisecond)
	select {
	case <-single.Done():
	default:
		t.Error("a single lease did not end either")
	}
	select {
	case <-ls.Done():
	default:
		t.Fatalf("both lease: validity passed %v ago, Done not closed, Err=%v; the holder is never told", time.Since(ls.ValidUntil()), ls.Err())
	}
}

// TestExtendReleaseRace: Extend racing Release leaves Err matching
// ErrReleased.
func TestExtendReleaseRace(t *testing.T) {
	f := newFleet(t)
	l := f.client(migrate.PhaseBoth)
	bad := 0
	for i := 0; i < 3000; i++ {
		key := locktest.UniqueKey(t)
		ls := locktest.MustAcquire(t, l, key, distlock.WithTTL(time.Minute))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = ls.Extend(context.Background(), time.Minute) }()
		go func() { defer wg.Done(); _ = ls.Release(context.Background()) }()
		wg.Wait()
		if !errors.Is(ls.Err(), distlock.ErrReleased) {
			bad++
			if bad == 1 {
				t.Logf("iteration %d: Err after Release = %v", i, ls.Err())
			}
		}
		if heldOn(t, f.from, key) || heldOn(t, f.to, key) {
			t.Fatalf("key left held")
		}
	}
	if bad > 0 {
		t.Fatalf("%d/3000 released leases report Err not matching ErrReleased", bad)
	}
}

// TestSameBackendTwoSpellings: from and to naming one space in two
// spellings are refused (both would wait on itself).
func TestSameBackendTwoSpellings(t *testing.T) {
	q := url.Values{"from": {"mem://same-" + t.Name()}, "to": {"mem://same-" + t.Name() + "/"}, "phase": {"both"}}
	l, err := distlock.Open(t.Context(), "migrate://?"+q.Encode())
	if err != nil {
		t.Logf("rejected: %v", err)
		return
	}
	defer l.Close()
	_, err = l.TryAcquire(t.Context(), "k")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err2 := l.Acquire(ctx, "k", distlock.WithTTL(50*time.Millisecond))
	t.Fatalf("same space accepted as from and to; TryAcquire on a free key: %v; Acquire: %v", err, err2)
}

// TestURLHostile: hostile URLs give one-line errors matching
// ErrInvalidArgument that never quote a password.
func TestURLHostile(t *testing.T) {
	enc := url.QueryEscape
	cases := map[string]string{
		"bad escape elsewhere":  "migrate://?from=" + enc("redis://u:s3cret@h:6379") + "&to=" + enc("mem://b") + "&phase=both&x=%zz",
		"semicolon":             "migrate://?from=" + enc("redis://u:s3cret@h:6379") + ";to=" + enc("mem://b") + "&phase=both",
		"nested bad port":       "migrate://?from=" + enc("redis://u:s3cret@h:notaport") + "&to=" + enc("mem://b") + "&phase=both",
		"nested no scheme":      "migrate://?from=" + enc("//u:s3cret@h:6379") + "&to=" + enc("mem://b") + "&phase=both",
		"nested unknown scheme": "migrate://?from=" + enc("nosuch://u:s3cret@h:6379") + "&to=" + enc("mem://b") + "&phase=both",
		"nested control char":   "migrate://?from=" + enc("redis://u:s3cret@h:6379/\x7f") + "&to=" + enc("mem://b") + "&phase=both",
		"nested bad query":      "migrate://?from=" + enc("mem://a?password=s3cret&x=%zz") + "&to=" + enc("mem://b") + "&phase=both",
		"outer control char":    "migrate://?from=" + enc("redis://u:s3cret@h") + "&to=" + enc("mem://b") + "&phase=both\x01",
		"repeated from":         "migrate://?from=" + enc("mem://a") + "&from=" + enc("redis://u:s3cret@h") + "&to=" + enc("mem://b") + "&phase=both",
		"user in outer":         "migrate://u:s3cret@?from=" + enc("mem://a") + "&to=" + enc("mem://b") + "&phase=both",
		"double nested escaped": "migrate://?from=" + enc(enc("migrate://?from=x")) + "&to=" + enc("mem://b") + "&phase=both",
		"uppercase nested":      "migrate://?from=" + enc("MIGRATE://?from=x") + "&to=" + enc("mem://b") + "&phase=both",
		"space nested":          "migrate://?from=" + enc(" migrate://?from=x") + "&to=" + enc("mem://b") + "&phase=both",
		"empty phase val":       "migrate://?from=" + enc("mem://a") + "&to=" + enc("mem://b") + "&phase=",
		"phase twice":           "migrate://?from=" + enc("mem://a") + "&to=" + enc("mem://b") + "&phase=both&phase=to",
		"fragment":              "migrate://?from=" + enc("mem://a") + "&to=" + enc("mem://b") + "&phase=both#frag",
		"opaque":                "migrate:?from=" + enc("mem://a") + "&to=" + enc("mem://b") + "&phase=both",
		"huge budget":           "migrate://?from=" + enc("mem://a") + "&to=" + enc("mem://b") + "&phase=shadow&shadow_budget=99999999999h",
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			var l distlock.Locker
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("panic: %v", r)
					}
				}()
				l, err = distlock.Open(context.Background(), raw)
			}()
			if err == nil {
				t.Logf("opened: %v", l)
				l.Close()
				return
			}
			msg := err.Error()
			var probs []string
			if !errors.Is(err, distlock.ErrInvalidArgument) {
				probs = append(probs, "not ErrInvalidArgument")
			}
			if strings.Contains(msg, "\n") {
				probs = append(probs, "multi-line")
			}
			if strings.Contains(msg, "s3cret") {
				probs = append(probs, "LEAKS SECRET")
			}
			if len(probs) > 0 {
				t.Errorf("%v: %q", probs, msg)
			} else {
				t.Logf("ok: %s", msg)
			}
		})
	}
}
