// Docker access shared by all nodes: the client, RequireDocker, and the
// labels that let Leftovers find what this process created.

package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// Labels put on every container, network and volume the testbed creates.
const (
	// LabelTestbed marks resources created by any testbed process.
	LabelTestbed = "io.distlock.testbed"
	// LabelRun holds the ID of the process that created the resource
	// (see RunID).
	LabelRun = "io.distlock.testbed.run"
)

var runID = func() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// RunID identifies this test process; it is the value of LabelRun on the
// resources it creates.
func RunID() string { return runID }

func labels() map[string]string {
	return map[string]string{LabelTestbed: "true", LabelRun: runID}
}

var docker struct {
	once sync.Once
	cli  *engine
	err  error
}

// dockerClient returns the process-wide Docker Engine client (see
// newEngine), connecting on first use.
func dockerClient() (*engine, error) {
	docker.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cli, err := newEngine(ctx)
		if err == nil {
			err = cli.ping(ctx)
		}
		if err == nil {
			docker.cli = cli
		}
		docker.err = err
	})
	return docker.cli, docker.err
}

// RequireDocker skips the test under -short ("-short: skipping container
// test") or when the Docker daemon cannot be reached. With
// DISTLOCK_REQUIRE_DOCKER=1 (set by `make test`, so CI never passes by
// skipping) an unreachable daemon fails the test instead.
func RequireDocker(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping container test")
	}
	if _, err := dockerClient(); err != nil {
		if os.Getenv("DISTLOCK_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker unavailable and DISTLOCK_REQUIRE_DOCKER=1: %v", err)
		}
		t.Skipf("docker unavailable: skipping container test: %v", err)
	}
}

// Leftovers lists the containers and networks this process created that
// still exist, as "container <name>" and "network <name>". After all tests
// have ended it should be empty; a TestMain can check that.
func Leftovers(ctx context.Context) ([]string, error) {
	cli, err := dockerClient()
	if err != nil {
		return nil, err
	}
	label := LabelRun + "=" + runID
	var out []string
	cs, err := cli.containerList(ctx, label)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs {
		out = append(out, fmt.Sprintf("container %v (%s)", c.Names, c.State))
	}
	ns, err := cli.networkList(ctx, label)
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	return out, nil
}
