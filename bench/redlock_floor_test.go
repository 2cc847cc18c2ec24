package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/resp"
)

// delScript is the compare-and-delete every Redlock client releases with
// (redsync's, without our queue and fence keys).
const delScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`

// rlFloor is the Redlock protocol floor of benchmarks B1 and B6 (see
// docs/benchmarks.md): one goroutine over plain sockets writes a request
// to every node, then reads every reply (the multiplexed fan-out of the
// Redlock algorithm), with no library, no validity, no fence, no timeouts
// and no error handling beyond failing the benchmark. It bounds how fast
// any Redlock client can acquire and release on the servers it runs
// against, so that ours/floor shows what our library adds and
// floor/redsync how far below redsync a client can get.
type rlFloor struct {
	conns []net.Conn
	rs    []*bufio.Reader
	ws    []*bufio.Writer
	sha   string
	token int
}

// newRLFloor dials every address and loads delScript; the connections
// are closed when b ends.
func newRLFloor(b testing.TB, addrs []string) *rlFloor {
	b.Helper()
	f := &rlFloor{}
	for _, a := range addrs {
		c, err := net.Dial("tcp", a)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		f.conns = append(f.conns, c)
		f.rs = append(f.rs, bufio.NewReader(c))
		f.ws = append(f.ws, bufio.NewWriter(c))
		cl := redis.NewClient(&redis.Options{Addr: a, DisableIdentity: true})
		sha, err := cl.ScriptLoad(context.Background(), delScript).Result()
		_ = cl.Close()
		if err != nil {
			b.Fatal(err)
		}
		f.sha = sha
	}
	return f
}

// round writes args to every node, flushing each (one write per node, as
// a client must: the nodes are independent connections), then reads one
// reply from each, and returns how many replies equal want (a string for
// a simple string, an int64 for an integer: see resp.ReadReply).
func (f *rlFloor) round(b testing.TB, want any, args ...string) int {
	for _, w := range f.ws {
		resp.WriteCommand(w, args...)
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	got := 0
	for _, r := range f.rs {
		v, err := resp.ReadReply(r)
		if err != nil {
			b.Fatal(err)
		}
		if v == want {
			got++
		}
	}
	return got
}

// pair acquires key on a majority with SET NX PX and releases it with the
// compare-and-delete, as one uncontended Redlock acquire+release.
func (f *rlFloor) pair(b testing.TB, key string, ttl time.Duration) error {
	f.token++
	tok := "floor-" + strconv.Itoa(f.token)
	if got := f.round(b, "OK", "SET", key, tok, "NX", "PX", strconv.FormatInt(ttl.Milliseconds(), 10)); got <= len(f.conns)/2 {
		return fmt.Errorf("floor: %d of %d nodes granted %s", got, len(f.conns), key)
	}
	if got := f.round(b, int64(1), "EVALSHA", f.sha, "1", key, tok); got <= len(f.conns)/2 {
		return fmt.Errorf("floor: %d of %d nodes released %s", got, len(f.conns), key)
	}
	return nil
}
