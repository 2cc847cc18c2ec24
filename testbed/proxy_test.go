package testbed

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// echoServer answers each line it receives with prefix+line on loopback.
// stop closes it and joins its goroutines.
func echoServer(t *testing.T, prefix string) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, prefix+line); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip sends line and reads one reply line within timeout.
func roundTrip(c net.Conn, line string, timeout time.Duration) (string, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(reply, "\n"), err
}

func mustRoundTrip(t *testing.T, c net.Conn, line, want string) {
	t.Helper()
	got, err := roundTrip(c, line, 2*time.Second)
	if err != nil || got != want {
		t.Fatalf("round trip %q: got %q, %v; want %q", line, got, err, want)
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

func TestProxyForwardsAndRetargets(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, stopA := echoServer(t, "a:")
	defer stopA()
	b, stopB := echoServer(t, "b:")
	defer stopB()
	p := newProxy(t, a)
	defer p.Close()

	c1, c2 := dial(t, p.Addr()), dial(t, p.Addr())
	defer c1.Close()
	defer c2.Close()
	mustRoundTrip(t, c1, "hello", "a:hello")
	mustRoundTrip(t, c2, "world", "a:world")
	mustRoundTrip(t, c1, "again", "a:again")

	p.SetTarget(b)
	if got, err := roundTrip(c1, "x", time.Second); err == nil {
		t.Fatalf("old connection still works after SetTarget: %q", got)
	}
	c3 := dial(t, p.Addr())
	defer c3.Close()
	mustRoundTrip(t, c3, "hi", "b:hi")
	if p.Target() != b {
		t.Fatalf("Target() = %q, want %q", p.Target(), b)
	}
}

func TestProxyNoTargetRefuses(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := newProxy(t, "")
	defer p.Close()
	c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		return // reset so fast that connect saw it: refused, as wanted
	}
	defer c.Close()
	if _, err := roundTrip(c, "x", time.Second); err == nil || isTimeout(err) {
		t.Fatalf("want connection closed, got %v", err)
	}
}

func TestProxyBlackholeAndHeal(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, stop := echoServer(t, "")
	defer stop()
	p := newProxy(t, a)
	defer p.Close()

	old := dial(t, p.Addr())
	defer old.Close()
	mustRoundTrip(t, old, "before", "before")

	p.Blackhole()
	if _, err := roundTrip(old, "lost", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("existing connection while blackholed: want timeout, got %v", err)
	}
	during := dial(t, p.Addr()) // still accepted, like a partition
	defer during.Close()
	if _, err := roundTrip(during, "lost", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("new connection while blackholed: want timeout, got %v", err)
	}

	p.Heal()
	// The dropped line stays dropped; new traffic flows again.
	mustRoundTrip(t, old, "after", "after")
	mustRoundTrip(t, during, "after2", "after2")
	fresh := dial(t, p.Addr())
	defer fresh.Close()
	mustRoundTrip(t, fresh, "fresh", "fresh")
}

func TestProxyBlackholeUnreachableTargetHangs(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, stop := echoServer(t, "")
	stop() // nothing listens at a any more
	p := newProxy(t, a)
	defer p.Close()
	p.Blackhole()
	c := dial(t, p.Addr())
	defer c.Close()
	if _, err := roundTrip(c, "x", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("want timeout (partition), got %v", err)
	}
	p.Heal() // the sink connection is closed
	if _, err := roundTrip(c, "x", time.Second); err == nil || isTimeout(err) {
		t.Fatalf("after Heal: want connection closed, got %v", err)
	}
}

func TestProxyLatency(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, stop := echoServer(t, "")
	defer stop()
	p := newProxy(t, a)
	defer p.Close()
	c := dial(t, p.Addr())
	defer c.Close()
	mustRoundTrip(t, c, "warm", "warm")

	const d = 100 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	mustRoundTrip(t, c, "slow", "slow")
	if rtt := time.Since(start); rtt < 2*d || rtt > 2*d+300*time.Millisecond {
		t.Fatalf("round trip with latency %v each way took %v; want about %v", d, rtt, 2*d)
	}

	// Pipelined lines keep their order and are not delayed cumulatively.
	start = time.Now()
	if _, err := io.WriteString(c, "1\n2\n3\n4\n5\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	r := bufio.NewReader(c)
	for _, want := range []string{"1", "2", "3", "4", "5"} {
		got, err := r.ReadString('\n')
		if err != nil || got != want+"\n" {
			t.Fatalf("pipelined: got %q, %v; want %q", got, err, want)
		}
	}
	if el := time.Since(start); el > 2*d+300*time.Millisecond {
		t.Fatalf("5 pipelined lines took %v; want about %v", el, 2*d)
	}

	p.Heal()
	start = time.Now()
	mustRoundTrip(t, c, "fast", "fast")
	if rtt := time.Since(start); rtt > d {
		t.Fatalf("after Heal round trip took %v", rtt)
	}
}

func TestProxyReset(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, stop := echoServer(t, "")
	defer stop()
	p := newProxy(t, a)
	defer p.Close()
	c := dial(t, p.Addr())
	defer c.Close()
	mustRoundTrip(t, c, "x", "x")

	p.Reset()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("after Reset: want reset or EOF, got %v", err)
	}
	c2 := dial(t, p.Addr())
	defer c2.Close()
	mustRoundTrip(t, c2, "y", "y")
}

func TestProxyCloseJoinsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a, stop := echoServer(t, "")
	defer stop()
	p := newProxy(t, a)

	var conns []net.Conn
	for range 5 {
		c := dial(t, p.Addr())
		defer c.Close()
		mustRoundTrip(t, c, "x", "x")
		conns = append(conns, c)
	}
	// Leave chunks waiting on latency and a blackholed connection open.
	p.SetLatency(time.Hour)
	for _, c := range conns {
		_, _ = io.WriteString(c, "pending\n")
	}
	p.Blackhole()
	c := dial(t, p.Addr())
	defer c.Close()

	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("proxy still accepts after Close")
	}
}

func TestProxyDropRepliesDeliversRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // one connection: record each line and echo it
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			got <- line
			_, _ = c.Write([]byte(line))
		}
	}()
	p := newProxy(t, ln.Addr().String())
	c := dial(t, p.Addr())
	mustRoundTrip(t, c, "before", "before")
	<-got
	p.DropReplies()
	if _, err := roundTrip(c, "acted", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("reply while dropping: want timeout, got %v", err)
	}
	select {
	case line := <-got:
		if line != "acted\n" {
			t.Fatalf("server got %q", line)
		}
	case <-time.After(time.Second):
		t.Fatal("request did not reach the server")
	}
	p.Heal()
	_ = c.Close()
	_ = p.Close()
	_ = ln.Close()
	wg.Wait()
}
