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

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Labels put on every container and network the testbed creates.
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
	cli  *testcontainers.DockerClient
	err  error
}

// dockerClient returns the process-wide Docker client, connecting on first
// use.
func dockerClient() (*testcontainers.DockerClient, error) {
	docker.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		docker.cli, docker.err = testcontainers.NewDockerClientWithOpts(ctx)
		if docker.err == nil {
			_, docker.err = docker.cli.Ping(ctx, client.PingOptions{})
		}
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
	f := make(client.Filters).Add("label", LabelRun+"="+runID)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		out = append(out, fmt.Sprintf("container %v (%s)", c.Names, c.State))
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	return out, nil
}
