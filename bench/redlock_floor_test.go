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
)

// delScript is the compare-and-delete every Redlock client releases with
// (redsync's, without our queue and fence keys).
const delScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`

// rlFloor is PERFORMANCE.md's Redlock floor: one goroutine over plain
// sockets writes a request to every node, then reads every reply (the
// spec's multiplexed fan-out), with no library, no validity, no fence, no
// timeouts and no error handling beyond failing the benchmark. It bounds
// how fast any Redlock client can acquire and release on these servers
// and this machine, so that ours/floor shows what our library adds and
// floor/redsync shows how far below redsync a client can get here.
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
// reply line from each, and returns how many replies equal want.
func (f *rlFloor) round(b testing.TB, want string, args ...string) int {
	for _, w := range f.ws {
		fmt.Fprintf(w, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	got := 0
	for _, r := range f.rs {
		line, err := r.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		if line == want {
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
	if got := f.round(b, "+OK\r\n", "SET", key, tok, "NX", "PX", strconv.FormatInt(ttl.Milliseconds(), 10)); got <= len(f.conns)/2 {
		return fmt.Errorf("floor: %d of %d nodes granted %s", got, len(f.conns), key)
	}
	if got := f.round(b, ":1\r\n", "EVALSHA", f.sha, "1", key, tok); got <= len(f.conns)/2 {
		return fmt.Errorf("floor: %d of %d nodes released %s", got, len(f.conns), key)
	}
	return nil
}
