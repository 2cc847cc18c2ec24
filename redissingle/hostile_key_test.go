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

// TestHostileKeys: every key either works as an independent lock or is
// refused with a one-line error matching ErrInvalidArgument; none may
// break another key's acquisition or fence, on a Locker without a prefix
// or with one. Keys that name the Lockers' own keys (the fence counters,
// a wait queue, a pub/sub channel), of this prefix or another, must be
// refused.
func TestHostileKeys(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	plain := [2]*redissingle.Locker{s.locker(t, "a", nil), s.locker(t, "b", nil)}
	appOpts := &redissingle.Options{Prefix: "app:"}
	app := [2]*redissingle.Locker{s.locker(t, "app-a", appOpts), s.locker(t, "app-b", appOpts)}

	// The exact names of the internal keys: a queued waiter on victim
	// shows its queue key and its Locker's channel.
	const victim = "victim"
	held := mustAcquire(t, plain[0], victim)
	handed := make(chan distlock.Lease, 1)
	go func() {
		ls, err := plain[1].Acquire(ctx, victim)
		if err != nil {
			t.Errorf("victim waiter: %v", err)
		}
		handed <- ls
	}()
	eventually(t, hostileKeyWait, "victim waiter never queued", func() bool {
		return len(s.keysMatching(t, "distlock:*:q:"+victim)) == 1
	})
	queueKey := s.keysMatching(t, "distlock:*:q:"+victim)[0]
	channels, err := s.admin().PubSubChannels(ctx, "distlock:w:*").Result()
	if err != nil || len(channels) == 0 {
		t.Fatalf("PUBSUB CHANNELS: %v %v", channels, err)
	}
	mustRelease(t, held)
	if ls := <-handed; ls != nil {
		mustRelease(t, ls)
	}
	tag := queueKey[len("distlock:") : len("distlock:")+5] // "{xyz}"

	// Another key's acquisitions, on both Lockers, and both fence
	// counters, must be unaffected by whatever a hostile key did.
	last := map[string]uint64{}
	checkOthers := func(t *testing.T) {
		t.Helper()
		for name, l := range map[string]*redissingle.Locker{"plain": plain[0], "app": app[0]} {
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
	checkOthers(t)

	for _, tc := range []struct {
		name, key string
		refused   bool
	}{
		{"FenceCounter", "distlock:fence", true},
		{"ReservedPrefix", "distlock:", true},
		{"ReservedName", "distlock:mine", true},
		{"QueueKey", queueKey, true},
		{"ClusterFenceCounter", "distlock:" + tag + ":fence", true},
		{"Channel", channels[0], true},
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
	} {
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
	got := make(chan distlock.Lease, 1)
	go func() {
		l, err := ls[1].Acquire(ctx, key)
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		got <- l
	}()
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
