package bench

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cpuMeter measures the CPU time a round of a benchmark costs this process
// (getrusage: user + system, every goroutine) and the Redis servers (the
// sum over the nodes of used_cpu_user + used_cpu_sys from INFO cpu, which
// each server takes from its own getrusage). The benchmarks run one
// implementation at a time, so the deltas of a round belong to it.
type cpuMeter struct {
	nodes []*redis.Client
}

// newCPUMeter opens one plain client per node (closed with the test).
func newCPUMeter(t testing.TB, addrs []string) *cpuMeter {
	t.Helper()
	m := &cpuMeter{}
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { _ = c.Close() })
		m.nodes = append(m.nodes, c)
	}
	return m
}

// cpuSample is the cumulative CPU time of the client and the servers.
type cpuSample struct{ client, servers time.Duration }

func (m *cpuMeter) sample(t testing.TB) cpuSample {
	t.Helper()
	var s cpuSample
	for _, c := range m.nodes {
		info, err := c.Info(context.Background(), "cpu").Result()
		if err != nil {
			t.Fatal(err)
		}
		s.servers += serverCPU(t, info)
	}
	// The process last: a "before" sample then leaves its own INFO round
	// trips out of the measured interval (an "after" sample counts them,
	// about 0.3% of a round).
	s.client = processCPU(t)
	return s
}

// serverCPU parses used_cpu_user and used_cpu_sys (seconds, µs precision)
// out of an INFO cpu reply.
func serverCPU(t testing.TB, info string) time.Duration {
	t.Helper()
	var d time.Duration
	found := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_user" && k != "used_cpu_sys") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("INFO cpu %s: %v", k, err)
		}
		d += time.Duration(f * float64(time.Second))
		found++
	}
	if found != 2 {
		t.Fatalf("INFO cpu: used_cpu_user/used_cpu_sys missing in %q", info)
	}
	return d
}

// sub returns the CPU time spent between a and s.
func (s cpuSample) sub(a cpuSample) cpuSample {
	return cpuSample{client: s.client - a.client, servers: s.servers - a.servers}
}

// add returns the sum of s and a.
func (s cpuSample) add(a cpuSample) cpuSample {
	return cpuSample{client: s.client + a.client, servers: s.servers + a.servers}
}

// processCPU is this process's CPU time so far (user + system, every
// goroutine, including the client library's background ones).
func processCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
