package redissingle_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/redissingle"
	"github.com/distlock/distlock/testbed"
)

// TestEvictingServer: a server that may evict lock keys (maxmemory with
// allkeys-lru) is refused at the first acquisition unless eviction is
// allowed; a server that refuses CONFIG is not judged; the settings are
// read once per Locker once judged safe. The subtests change the server's
// settings, so they run in order.
func TestEvictingServer(t *testing.T) {
	testbed.RequireDocker(t)
	s := &server{node: testbed.StartRedis(t, 1, testbed.RedisOptions{
		Args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"},
	})[0]}
	ctx := context.Background()
	url := "redis://" + s.node.Addr() + "/0"

	// refused checks that l refuses an acquisition, and writes nothing.
	refused := func(t *testing.T, l distlock.Locker, policy string) {
		t.Helper()
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
	works := func(t *testing.T, l distlock.Locker) {
		t.Helper()
		mustRelease(t, mustAcquire(t, l, uniqueKey(t)))
	}

	t.Run("Refused", func(t *testing.T) {
		refused(t, s.locker(t, "a", nil), "allkeys-lru")
		l, err := distlock.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		refused(t, l, "allkeys-lru")
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

	t.Run("ConfigRefusedIsNotJudged", func(t *testing.T) {
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
	})

	t.Run("VolatilePolicyRefused", func(t *testing.T) {
		if err := s.admin().ConfigSet(ctx, "maxmemory-policy", "volatile-ttl").Err(); err != nil {
			t.Fatal(err)
		}
		refused(t, s.locker(t, "a", nil), "volatile-ttl")
	})

	t.Run("FixedWhileRunning", func(t *testing.T) {
		l := s.locker(t, "a", nil)
		refused(t, l, "volatile-ttl")
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

	t.Run("FullMemoryIsUnavailable", func(t *testing.T) {
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
	})
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
