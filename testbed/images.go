package testbed

import (
	"context"
	"os"
	"testing"
	"time"
)

// Image says which container image runs one kind of server.
type Image struct {
	// Env is the environment variable that overrides the image.
	Env string
	// Default is the official image, pinned, used when Env is unset.
	Default string
	// Local is the image scripts/images.sh builds from Debian packages,
	// used when Env is unset and Default is not present locally.
	Local string
}

// Images lists the image of each server kind. The repository's Makefile
// exports the Env variables pointing at the Local images; the Defaults
// matter on machines that can pull from a registry.
var Images = struct {
	Redis, Postgres, Etcd, ZooKeeper Image
	// PgBouncer has no official image: Default is the local one.
	PgBouncer Image
}{
	Redis:     Image{Env: "DISTLOCK_REDIS_IMAGE", Default: "redis:7.0.15", Local: "distlock/redis:7.0-bookworm"},
	Postgres:  Image{Env: "DISTLOCK_POSTGRES_IMAGE", Default: "postgres:15.8", Local: "distlock/postgres:15-bookworm"},
	Etcd:      Image{Env: "DISTLOCK_ETCD_IMAGE", Default: "quay.io/coreos/etcd:v3.4.33", Local: "distlock/etcd:3.4-bookworm"},
	ZooKeeper: Image{Env: "DISTLOCK_ZOOKEEPER_IMAGE", Default: "zookeeper:3.8.4", Local: "distlock/zookeeper:3.8-bookworm"},
	PgBouncer: Image{Env: "DISTLOCK_PGBOUNCER_IMAGE", Default: "distlock/pgbouncer:1.18-bookworm", Local: "distlock/pgbouncer:1.18-bookworm"},
}

// Resolve returns the image to run: the Env variable's value when set;
// else Default if it is present locally; else Local if it is present
// locally (logged). When neither is present it fails the test: nothing is
// pulled, run scripts/images.sh (make images) or pull Default yourself.
func (im Image) Resolve(t testing.TB) string {
	t.Helper()
	if v := os.Getenv(im.Env); v != "" {
		return v
	}
	cli, err := dockerClient()
	if err != nil {
		t.Fatalf("testbed: docker: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	present := func(ref string) bool {
		ok, err := cli.imagePresent(ctx, ref)
		if err != nil {
			t.Fatalf("testbed: inspect image %s: %v", ref, err)
		}
		return ok
	}
	switch {
	case present(im.Default):
		return im.Default
	case present(im.Local):
		t.Logf("testbed: %s unset and %s not present locally: using %s", im.Env, im.Default, im.Local)
		return im.Local
	}
	t.Fatalf("testbed: neither %s nor %s is present locally (%s unset): run scripts/images.sh (make images) or docker pull %s",
		im.Default, im.Local, im.Env, im.Default)
	return ""
}
