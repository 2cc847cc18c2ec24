package migrate_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/locktest"
	_ "github.com/distlock/distlock/memlock"
	"github.com/distlock/distlock/migrate"
)

func migrateURL(from, to, phase string, extra ...string) string {
	q := url.Values{"from": {from}, "to": {to}, "phase": {phase}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return "migrate://?" + q.Encode()
}

// TestOpenURL: the nested URLs keep their own parameters (here the mem
// space names and a TTL), and the composite locks where its phase says.
func TestOpenURL(t *testing.T) {
	from, to := "mem://"+t.Name()+"-old?ttl=7s", "mem://"+t.Name()+"-new"
	l, err := distlock.Open(t.Context(), migrateURL(from, to, "both", "shadow_budget", "2s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ml, ok := l.(*migrate.Locker)
	if !ok || ml.Phase() != migrate.PhaseBoth {
		t.Fatalf("Open returned %T in phase %v", l, ml.Phase())
	}
	key := locktest.UniqueKey(t)
	ls := locktest.MustAcquire(t, l, key)
	defer locktest.MustRelease(t, ls)
	oldSide, err := distlock.Open(t.Context(), from)
	if err != nil {
		t.Fatal(err)
	}
	defer oldSide.Close()
	if !heldOn(t, oldSide, key) {
		t.Fatal("the lease is not held on the space the from URL names")
	}
	if p, ok := migrate.Fences(ls); !ok || p.From == 0 || p.To == 0 {
		t.Fatalf("a both lease's fences are %v", p)
	}
	if g := l.Guarantees().Backend; g != "migrate(mem->mem,both)" {
		t.Errorf("Backend %q", g)
	}
}

func TestOpenURLRejects(t *testing.T) {
	mem1, mem2 := "mem://a", "mem://b"
	for name, raw := range map[string]string{
		"no from":       "migrate://?" + url.Values{"to": {mem2}, "phase": {"both"}}.Encode(),
		"no to":         "migrate://?" + url.Values{"from": {mem1}, "phase": {"both"}}.Encode(),
		"same URLs":     migrateURL(mem1, mem1, "both"),
		"no phase":      "migrate://?" + url.Values{"from": {mem1}, "to": {mem2}}.Encode(),
		"unknown phase": migrateURL(mem1, mem2, "dual"),
		"nested":        migrateURL(migrateURL(mem1, mem2, "both"), mem2, "both"),
		"unknown param": migrateURL(mem1, mem2, "both", "ttl", "1s"),
		"bad budget":    migrateURL(mem1, mem2, "shadow", "shadow_budget", "-1s"),
		"host":          "migrate://host?" + url.Values{"from": {mem1}, "to": {mem2}, "phase": {"to"}}.Encode(),
		"bad nested":    migrateURL("mem://a?bogus=1", mem2, "to"),
	} {
		t.Run(name, func(t *testing.T) {
			l, err := distlock.Open(t.Context(), raw)
			if err == nil {
				l.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, distlock.ErrInvalidArgument) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line matching ErrInvalidArgument", err)
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	f := newFleet(t)
	if _, err := migrate.New(f.from, f.from, migrate.Options{Phase: migrate.PhaseBoth}); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("same Locker: %v", err)
	}
	if _, err := migrate.New(f.from, nil, migrate.Options{Phase: migrate.PhaseBoth}); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("nil Locker: %v", err)
	}
	if _, err := migrate.New(f.from, f.to, migrate.Options{}); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Errorf("no phase: %v", err)
	}
}

// crossProcess is a Locker that only states guarantees; New reads them
// before any call.
type crossProcess struct{ distlock.Locker }

func (crossProcess) Guarantees() distlock.Guarantees {
	return distlock.Guarantees{Backend: "shared", CrossProcess: true}
}

func TestNewRejectsInProcessWithShared(t *testing.T) {
	f := newFleet(t)
	_, err := migrate.New(f.from, crossProcess{}, migrate.Options{Phase: migrate.PhaseBoth})
	if !errors.Is(err, distlock.ErrInvalidArgument) || !strings.Contains(err.Error(), "in-process") {
		t.Fatalf("mem paired with a shared backend: %v", err)
	}
}
