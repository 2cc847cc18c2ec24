package redissingle_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
)

// hostileKeyWait bounds each blocking call of TestHostileKeys: a key that
// neither works nor is refused shows up as a call that runs into it.
const hostileKeyWait = 5 * time.Second

// TestHostileKeys checks that every key either works as an independent
// lock or is refused with a one-line error matching ErrInvalidArgument,
// and that none breaks another key's acquisition or fence, on a Locker
// without a prefix or with one. Keys that name the Lockers' own keys (the
// fence counters, a wait queue, a pub/sub channel), of this prefix or
// another, are refused.
func TestHostileKeys(t *testing.T) {
	s := startRedis(t)
	plain := [2]*redissingle.Locker{s.locker(t, "a", nil), s.locker(t, "b", nil)}
	appOpts := &redissingle.Options{Prefix: "app:"}
	app := [2]*redissingle.Locker{s.locker(t, "app-a", appOpts), s.locker(t, "app-b", appOpts)}
	queueKey, channel := internalNames(t, s, plain)
	checkOthers := othersUnaffected(s, plain[0], app[0])
	checkOthers(t)
	for _, tc := range hostileKeys(queueKey, channel) {
		t.Run(tc.name, func(t *testing.T) {
			for prefix, ls := range map[string][2]*redissingle.Locker{"": plain, "app:": app} {
				if refused := useHostileKey(t, s, prefix, ls, tc.key); refused != tc.refused {
					t.Errorf("prefix %q: refused %v, want %v", prefix, refused, tc.refused)
				}
			}
			checkOthers(t)
		})
	}
}

// victim is the key whose internal names TestHostileKeys uses as keys.
const victim = "victim"

// internalNames returns the exact names of victim's wait queue and of a
// Locker's pub/sub channel on s, as a queued waiter shows them.
func internalNames(t *testing.T, s *server, plain [2]*redissingle.Locker) (queueKey, channel string) {
	t.Helper()
	ctx := context.Background()
	held := mustAcquire(t, plain[0], victim)
	handed := acquireAsync(t, ctx, plain[1], victim)
	eventually(t, hostileKeyWait, "victim waiter never queued", func() bool {
		return len(s.keysMatching(t, "distlock:*:q:"+victim)) == 1
	})
	queueKey = s.keysMatching(t, "distlock:*:q:"+victim)[0]
	channels, err := s.admin().PubSubChannels(ctx, "distlock:w:*").Result()
	if err != nil || len(channels) == 0 {
		t.Fatalf("PUBSUB CHANNELS: %v %v", channels, err)
	}
	mustRelease(t, held)
	if ls := <-handed; ls != nil {
		mustRelease(t, ls)
	}
	return queueKey, channels[0]
}

// othersUnaffected returns a check that victim's acquisitions on both
// Lockers, and both fence counters, are unaffected by whatever a hostile
// key did: each call's fences are newer than the last call's.
func othersUnaffected(s *server, plain, app *redissingle.Locker) func(t *testing.T) {
	last := map[string]uint64{}
	return func(t *testing.T) {
		t.Helper()
		ctx := context.Background()
		for name, l := range map[string]*redissingle.Locker{"plain": plain, "app": app} {
			ls, err := l.TryAcquire(ctx, victim)
			if err != nil {
				t.Fatalf("%s: another key's TryAcquire: %v", name, err)
			}
			if ls.Fence() <= last[name] {
				t.Errorf("%s: another key's fence %d after %d", name, ls.Fence(), last[name])
			}
			last[name] = ls.Fence()
			mustRelease(t, ls)
		}
		for _, counter := range []string{"distlock:fence", "app:distlock:fence"} {
			if _, err := s.admin().Get(ctx, counter).Uint64(); err != nil {
				t.Fatalf("fence counter %s: %v", counter, err)
			}
		}
	}
}

// hostileKey is a key TestHostileKeys tries, and whether it is refused.
type hostileKey struct {
	name, key string
	refused   bool
}

// hostileKeys lists the keys TestHostileKeys tries, given the names of a
// wait queue and a channel on the server.
func hostileKeys(queueKey, channel string) []hostileKey {
	tag := queueKey[len("distlock:") : len("distlock:")+5] // "{xyz}"
	return []hostileKey{
		{"FenceCounter", "distlock:fence", true},
		{"ReservedPrefix", "distlock:", true},
		{"ReservedName", "distlock:mine", true},
		{"QueueKey", queueKey, true},
		{"ClusterFenceCounter", "distlock:" + tag + ":fence", true},
		{"Channel", channel, true},
		{"OtherPrefixFenceCounter", "app:distlock:fence", true},
		{"OtherPrefixQueueKey", "app:" + queueKey, true},
		{"ReservedInside", "x:distlock:fence", true},
		{"ReservedWithNUL", "distlock:\x00", true},
		{"ReservedCaseDiffers", "DISTLOCK:fence", false},
		{"ReservedWithoutColon", "distlock", false},
		{"EntrySeparators", "ch|1|00ff|30000", false},
		{"Colons", "::q::", false},
		{"HashTag", "{" + victim + "}", false},
		{"Braces", "}{x{", false},
		{"GlobChars", "*?[a-z]\\", false},
		{"NUL", "\x00", false},
		{"NULInside", "a\x00b", false},
		{"NonUTF8", "\xff\xfe\xc3(", false},
		{"Newline", "line1\nline2", false},
		{"MaxLength", strings.Repeat("k", redissingle.MaxKeyLen), false},
		{"OverMaxLength", strings.Repeat("k", redissingle.MaxKeyLen+1), true},
		{"OneMiB", strings.Repeat("k", 1<<20), true},
	}
}

// useHostileKey acquires key with ls[0] (both Lockers have prefix), which
// must either fail with a one-line ErrInvalidArgument (it reports true;
// TryAcquire must then fail too) or work as a lock: ls[1] cannot take it,
// queues for it, and is handed it by the release with a higher fence.
func useHostileKey(t *testing.T, s *server, prefix string, ls [2]*redissingle.Locker, key string) (refused bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileKeyWait)
	defer cancel()
	held, err := ls[0].Acquire(ctx, key)
	if err != nil {
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("Acquire: %.300s, want success or ErrInvalidArgument", err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 300 {
			t.Fatalf("refusal is not one short line (%d bytes): %.300q", len(msg), msg)
		}
		_, err = ls[0].TryAcquire(ctx, key)
		wantErr(t, err, distlock.ErrInvalidArgument)
		return true
	}
	_, err = ls[1].TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrNotAcquired)
	got := acquireAsync(t, ctx, ls[1], key)
	eventually(t, hostileKeyWait, "waiter never queued", func() bool {
		// A queued waiter marks the value: "token:".
		return s.admin().Get(ctx, prefix+key).Val() == held.Token()+":"
	})
	mustRelease(t, held)
	next := <-got
	if next == nil {
		t.FailNow()
	}
	if next.Fence() <= held.Fence() {
		t.Errorf("fence %d after %d", next.Fence(), held.Fence())
	}
	mustRelease(t, next)
	return false
}
