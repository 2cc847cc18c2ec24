package testbed

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// frame is one frame of a multiplexed stream.
func frame(stream byte, payload string) []byte {
	b := make([]byte, 8, 8+len(payload))
	b[0] = stream
	binary.BigEndian.PutUint32(b[4:], uint32(len(payload)))
	return append(b, payload...)
}

func TestDemux(t *testing.T) {
	var in []byte
	in = append(in, frame(1, "out1\n")...)
	in = append(in, frame(2, "err\n")...)
	in = append(in, frame(1, "")...)
	in = append(in, frame(1, "out2\n")...)
	var out bytes.Buffer
	if err := demux(&out, bytes.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "out1\nerr\nout2\n"; got != want {
		t.Fatalf("demux = %q, want %q", got, want)
	}
	for name, bad := range map[string][]byte{
		"short header":    frame(1, "x")[:5],
		"short payload":   frame(1, "hello")[:10],
		"unknown stream":  frame(7, "x"),
		"oversized frame": {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
	} {
		if err := demux(&out, bytes.NewReader(bad)); err == nil {
			t.Errorf("%s: demux accepted %x", name, bad)
		}
	}
}

func TestPickAPIVersion(t *testing.T) {
	for _, c := range []struct{ min, max, want string }{
		{"1.12", "1.41", "1.41"},
		{"1.24", "1.47", "1.41"},
		{"1.44", "1.51", "1.44"},
		{"", "", "1.41"},
	} {
		if got, err := pickAPIVersion(c.min, c.max); err != nil || got != c.want {
			t.Errorf("pickAPIVersion(%q, %q) = %q, %v; want %q", c.min, c.max, got, err, c.want)
		}
	}
	if got, err := pickAPIVersion("1.12", "1.40"); err == nil {
		t.Errorf("pickAPIVersion of a 1.40 daemon = %q, want an error", got)
	}
	if !versionLess("1.9", "1.41") || versionLess("1.41", "1.41") || !versionLess("1.41", "2.0") {
		t.Error("versionLess compares the minor version as text")
	}
}

func TestNewEngineDockerHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for host, want := range map[string]string{
		"ssh://user@example": "scheme",
		"npipe:////./pipe/x": "scheme",
		"tcp://":             "without host",
	} {
		t.Setenv("DOCKER_HOST", host)
		if _, err := newEngine(ctx); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DOCKER_HOST=%s: err %v, want one naming %q", host, err, want)
		}
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	if _, err := newEngine(ctx); err == nil {
		t.Error("DOCKER_HOST naming a missing socket: no error")
	}
}

// TestEngineExec runs commands in a container through the engine client:
// the exit code and both output streams come back.
func TestEngineExec(t *testing.T) {
	RequireDocker(t)
	n := StartRedis(t, 1, RedisOptions{})[0].Node
	cli, err := dockerClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, out, err := cli.containerExec(ctx, n.ContainerID(), []string{"sh", "-c", "echo out; echo err >&2; exit 3"})
	if err != nil || code != 3 || !strings.Contains(string(out), "out\n") || !strings.Contains(string(out), "err\n") {
		t.Fatalf("exec = %d, %q, %v; want 3 and both lines", code, out, err)
	}
	if err := n.sh(ctx, "exit 0"); err != nil {
		t.Fatal(err)
	}
	if err := n.sh(ctx, "echo nope; exit 1"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("sh of a failing script: %v, want its exit code and output", err)
	}
}
