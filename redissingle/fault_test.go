package redissingle_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// TestUnreachable checks that with nothing listening on the server's
// port, TryAcquire fails at once with ErrUnavailable (not
// ErrNotAcquired), and Acquire returns at its deadline with an error
// matching ErrNotAcquired, the deadline and ErrUnavailable. It needs no
// container.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	l, err := redissingle.New(newClient(t, addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()

	start := time.Now()
	_, err = l.TryAcquire(ctx, "k")
	wantErr(t, err, distlock.ErrUnavailable)
	if errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("outage reported as contention: %v", err)
	}
	d := time.Since(start)
	t.Logf("TryAcquire against a closed port: %v after %v", err, d)
	if d > 2*time.Second {
		t.Fatalf("TryAcquire took %v", d)
	}

	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start = time.Now()
	_, err = l.Acquire(cctx, "k")
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, distlock.ErrUnavailable)
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("Acquire with a 1s deadline took %v", d)
	}
}

// TestPausedServer checks that calls to a frozen server, which answers
// nothing, return when their context ends, and that an acquisition the
// server runs after it resumes is released by the clean-up.
func TestPausedServer(t *testing.T) {
	s := startRedis(t)
	ctx := context.Background()
	l := s.locker(t, "a", nil)
	key := uniqueKey(t)
	mustRelease(t, mustAcquire(t, l, uniqueKey(t))) // warm up

	if err := s.node.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			_ = s.node.Unpause(ctx)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.TryAcquire(cctx, key)
	wantErr(t, err, distlock.ErrUnavailable, context.DeadlineExceeded)
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Fatalf("TryAcquire with a 200ms deadline took %v", d)
	}
	start = time.Now()
	_, err = l.Acquire(cctx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("Acquire with an expired deadline took %v", d)
	}

	if err := s.node.Unpause(ctx); err != nil {
		t.Fatal(err)
	}
	paused = false
	eventually(t, 5*time.Second, "the abandoned acquisition was not cleaned up", func() bool {
		return len(s.leftovers(t, key)) == 0
	})
	mustRelease(t, mustAcquire(t, s.locker(t, "b", nil), key))
}

// TestWaitReplicas checks that with WaitReplicas an acknowledged lock is
// on the replica, and an acquisition that no replica acknowledges is
// released and fails with a *ReplicationError matching ErrUnavailable.
func TestWaitReplicas(t *testing.T) {
	testbed.RequireDocker(t)
	rep := testbed.StartRedisReplicated(t, testbed.RedisOptions{})
	ctx := context.Background()
	l, err := redissingle.New(newClient(t, rep.Primary.Addr()), &redissingle.Options{WaitReplicas: 1, WaitTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	key := uniqueKey(t)

	ls := mustAcquire(t, l, key)
	eventually(t, 2*time.Second, "the replica does not have the acknowledged lock", func() bool {
		return rep.Replica.Admin().Get(ctx, key).Val() == ls.Token()
	})
	mustRelease(t, ls)

	if err := rep.Replica.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rep.Replica.Unpause(ctx) }()
	_, err = l.TryAcquire(ctx, key)
	var re *redissingle.ReplicationError
	if !errors.As(err, &re) || re.Acked != 0 || re.Want != 1 {
		t.Fatalf("TryAcquire with the replica paused: %v, want a ReplicationError 0 of 1", err)
	}
	wantErr(t, err, distlock.ErrUnavailable)
	if n := rep.Primary.Admin().Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the unacknowledged lock was not released")
	}
}

// TestEvictingServer checks that a server that may evict lock keys
// (maxmemory with an allkeys-* or volatile-* policy) is refused at the
// first acquisition unless eviction is allowed, that a server refusing
// CONFIG is not judged, that the settings are read once per Locker once
// judged safe, and that full memory under noeviction is ErrUnavailable.
// The subtests change the server's settings, so they run in order.
func TestEvictingServer(t *testing.T) {
	testbed.RequireDocker(t)
	s := &server{node: testbed.StartRedis(t, 1, testbed.RedisOptions{
		Args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"},
	})[0]}
	ctx := context.Background()
	url := "redis://" + s.node.Addr() + "/0"

	t.Run("Refused", func(t *testing.T) {
		refusedBy(t, s, s.locker(t, "a", nil), "allkeys-lru")
		l, err := distlock.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		refusedBy(t, s, l, "allkeys-lru")
	})

	t.Run("Allowed", func(t *testing.T) {
		works(t, s.locker(t, "a", &redissingle.Options{AllowEviction: true}))
		l, err := distlock.Open(ctx, url+"?allow_eviction=true")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		works(t, l)
	})

	t.Run("ConfigRefusedIsNotJudged", func(t *testing.T) { evictionConfigRefused(t, s) })

	t.Run("VolatilePolicyRefused", func(t *testing.T) {
		if err := s.admin().ConfigSet(ctx, "maxmemory-policy", "volatile-ttl").Err(); err != nil {
			t.Fatal(err)
		}
		refusedBy(t, s, s.locker(t, "a", nil), "volatile-ttl")
	})

	t.Run("FixedWhileRunning", func(t *testing.T) {
		l := s.locker(t, "a", nil)
		refusedBy(t, s, l, "volatile-ttl")
		if err := s.admin().ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			t.Fatal(err)
		}
		before := configCalls(t, s)
		for range 3 {
			works(t, l)
		}
		if n := configCalls(t, s) - before; n != 1 {
			t.Fatalf("the Locker ran CONFIG %d times over 3 acquisitions on a safe server, want once", n)
		}
	})

	t.Run("NoLimit", func(t *testing.T) {
		for name, v := range map[string]string{"maxmemory-policy": "allkeys-lru", "maxmemory": "0"} {
			if err := s.admin().ConfigSet(ctx, name, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
		works(t, s.locker(t, "a", nil))
	})

	t.Run("FullMemoryIsUnavailable", func(t *testing.T) { evictionFullMemory(t, s) })
}

// evictionConfigRefused checks that a server refusing CONFIG to the
// Locker's user is not judged: acquisitions work.
func evictionConfigRefused(t *testing.T, s *server) {
	ctx := context.Background()
	// A user without CONFIG, as on managed services.
	if err := s.admin().Do(ctx, "ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s.node.Addr())
	o := *c.Options()
	o.Username, o.Password = "noconfig", "pw"
	c = redis.NewClient(&o)
	defer c.Close()
	if err := c.ConfigGet(ctx, "maxmemory*").Err(); err == nil {
		t.Fatal("the user can run CONFIG")
	}
	l, err := redissingle.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	works(t, l)
}

// evictionFullMemory checks that with noeviction and memory full an
// acquisition fails with ErrUnavailable (a blocked Acquire keeps trying
// until its context ends), while a held lease can still be extended and
// released.
func evictionFullMemory(t *testing.T, s *server) {
	ctx := context.Background()
	// noeviction refuses writes that need memory when memory is full:
	// a condition to wait out, not a broken request.
	if err := s.admin().ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	l := s.locker(t, "a", nil)
	held := mustAcquire(t, l, uniqueKey(t))
	if err := s.admin().ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	key := uniqueKey(t)
	_, err := l.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrUnavailable)
	actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(actx, key)
	wantErr(t, err, distlock.ErrNotAcquired, context.DeadlineExceeded, distlock.ErrUnavailable)
	// Extending and releasing take no memory: they still work.
	if err := held.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("Extend with memory full: %v", err)
	}
	mustRelease(t, held)
	if err := s.admin().ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	works(t, l)
}

// refusedBy checks that l refuses an acquisition on s with an error
// matching ErrInvalidArgument that names policy and the fixes in one
// line, at once, and writes nothing.
func refusedBy(t *testing.T, s *server, l distlock.Locker, policy string) {
	t.Helper()
	ctx := context.Background()
	key := uniqueKey(t)
	_, err := l.TryAcquire(ctx, key)
	wantErr(t, err, distlock.ErrInvalidArgument)
	msg := err.Error()
	t.Logf("refused: %s", msg)
	for _, part := range []string{policy, "maxmemory-policy noeviction", "AllowEviction", "allow_eviction=true"} {
		if !strings.Contains(msg, part) {
			t.Fatalf("error %q does not name %q", msg, part)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Fatalf("error is not one line: %q", msg)
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err = l.Acquire(actx, key)
	wantErr(t, err, distlock.ErrInvalidArgument)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Acquire refused after %v", d)
	}
	if left := s.keysMatching(t, "*"+key+"*"); len(left) > 0 {
		t.Fatalf("a refused acquisition wrote %v", left)
	}
}

// works checks that l acquires and releases a key.
func works(t *testing.T, l distlock.Locker) {
	t.Helper()
	mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
}

// configCalls is how many CONFIG commands the server has run (INFO
// commandstats, cmdstat_config); the server's other clients must not run
// CONFIG meanwhile.
func configCalls(t *testing.T, s *server) int {
	t.Helper()
	info, err := s.admin().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(info, "\r\n") {
		stat, ok := strings.CutPrefix(line, "cmdstat_config")
		if !ok {
			continue
		}
		_, rest, _ := strings.Cut(stat, "calls=")
		n, err := strconv.Atoi(strings.Split(rest, ",")[0])
		if err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		total += n
	}
	return total
}
