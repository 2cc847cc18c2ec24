package etcdlock_test

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/etcdlock"
)

// TestHostileKeys calls Acquire and TryAcquire with keys built to collide
// with something: names the Locker uses itself, separators, NUL bytes,
// invalid UTF-8, a held lock's own entry, sizes at and past MaxKeyLen. Each
// key either works as an independent lock (exclusive, and released for the
// next holder) or is refused at once with a one-line error matching
// distlock.ErrInvalidArgument. Either way a lock held on another key
// through the same Locker, on the same etcd lease, stays held, exclusive
// and extendable.
func TestHostileKeys(t *testing.T) {
	c := startMember(t)
	l, other := c.locker(t, "l", nil), c.locker(t, "other", nil)
	admin := c.admin(t)
	base := uniqueKey(t)
	victimKey := base + "/victim"
	victim := mustAcquire(t, l, victimKey)
	entry := etcdlock.HeldDriver(l, victim).Entry()

	cases := []struct {
		name, key string
		refused   bool
	}{
		{name: "stream keeper's name", key: "\x00distlock-stream-keeper"},
		{name: "NUL", key: "\x00"},
		{name: "NUL inside", key: "a\x00b"},
		{name: "invalid UTF-8", key: "\xff\xfe\xfd"},
		{name: "truncated UTF-8", key: "k\xc3"},
		{name: "slash", key: "/"},
		{name: "slashes", key: "//"},
		{name: "parent of the held key", key: base},
		{name: "held key plus slash", key: victimKey + "/"},
		{name: "dot-dot to the held key", key: victimKey + "/../victim"},
		{name: "the held lock's entry", key: entry},
		{name: "a lease ID", key: path.Base(entry)},
		{name: "MaxKeyLen bytes", key: strings.Repeat("k", etcdlock.MaxKeyLen)},
		{name: "MaxKeyLen+1 bytes", key: strings.Repeat("k", etcdlock.MaxKeyLen+1), refused: true},
		{name: "1 MiB", key: strings.Repeat("k", 1<<20), refused: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.refused {
				_, err := l.TryAcquire(ctx, tc.key)
				wantRefused(t, "TryAcquire", err)
				start := time.Now()
				_, err = l.Acquire(ctx, tc.key)
				wantRefused(t, "Acquire", err)
				if took := time.Since(start); took > time.Second {
					t.Fatalf("Acquire took %v to refuse the key", took)
				}
			} else {
				for _, acquire := range []func(context.Context, string, ...distlock.Option) (distlock.Lease, error){l.TryAcquire, l.Acquire} {
					ls, err := acquire(ctx, tc.key)
					if err != nil {
						t.Fatalf("acquire %q: %v", tc.key, err)
					}
					if ls.Key() != tc.key {
						t.Fatalf("lease of key %q for %q", ls.Key(), tc.key)
					}
					if _, err := other.TryAcquire(ctx, tc.key); !errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable) {
						t.Fatalf("another Locker's TryAcquire of %q while held: %v, want not acquired", tc.key, err)
					}
					mustRelease(t, ls)
					mustRelease(t, mustAcquire(t, other, tc.key))
				}
			}
			// The lock on the victim key, on the same etcd lease, is
			// untouched: held, exclusive, its entry alone, extendable.
			if err := victim.Err(); err != nil {
				t.Fatalf("the lock on %s ended: %v", victimKey, err)
			}
			if _, err := other.TryAcquire(ctx, victimKey); !errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable) {
				t.Fatalf("TryAcquire of the held %s: %v, want not acquired", victimKey, err)
			}
			if got := entries(t, admin, victimKey); !slices.Equal(got, []string{entry}) {
				t.Fatalf("keys under %s/: %q, want its holder's entry %q only", victimKey, got, entry)
			}
			if err := victim.Extend(ctx, distlock.DefaultTTL); err != nil {
				t.Fatalf("Extend of the lock on %s: %v", victimKey, err)
			}
		})
	}
	mustRelease(t, victim)

	// The prefix counts apart: MaxKeyLen bytes of it, with a key of
	// MaxKeyLen bytes, work; one byte more is refused by New.
	long := strings.Repeat("p", etcdlock.MaxKeyLen)
	pl := c.locker(t, "prefixed", &etcdlock.Options{Prefix: long})
	mustRelease(t, mustAcquire(t, pl, strings.Repeat("k", etcdlock.MaxKeyLen)))
	_, err := etcdlock.New(admin, &etcdlock.Options{Prefix: long + "p"})
	wantRefused(t, "New", err)
}

// wantRefused checks that err refuses a bad key: it matches
// distlock.ErrInvalidArgument and not distlock.ErrUnavailable, and is one
// short line (a long key is not echoed).
func wantRefused(t *testing.T, op string, err error) {
	t.Helper()
	if !errors.Is(err, distlock.ErrInvalidArgument) || errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("%s: %.300v, want an error matching ErrInvalidArgument only", op, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 200 {
		t.Fatalf("%s: error of %d bytes, or not one line: %.300q", op, len(msg), msg)
	}
}
