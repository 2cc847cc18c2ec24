package testbed

import (
	"context"
	"testing"
	"time"
)

func TestDataVolumes(t *testing.T) {
	got := dataVolumes([]string{"/data", "/var/lib/x"}, map[string]string{"/var/lib/x": "rw"})
	want := []mountSpec{{Type: mountVolume, Target: "/data", VolumeOptions: &volumeOptions{Labels: labels()}}}
	if len(got) != 1 || got[0].Target != want[0].Target || got[0].Type != want[0].Type ||
		got[0].VolumeOptions == nil || got[0].VolumeOptions.Labels[LabelTestbed] != "true" {
		t.Fatalf("dataVolumes = %+v, want %+v (a tmpfs path gets no volume)", got, want)
	}
	if got := dataVolumes(nil, nil); len(got) != 0 {
		t.Fatalf("dataVolumes(nil) = %+v", got)
	}
}

// requireMount fails t unless n's container mounts a mount of type typ
// at path: the server's data is on a volume (or tmpfs), not in the
// container's writable layer (see dataVolumes). It returns the mount's
// name (a volume's name).
func requireMount(t *testing.T, n *Node, path string, typ string) string {
	t.Helper()
	cli, err := dockerClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := cli.containerInspect(ctx, n.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range info.Mounts {
		if m.Destination == path {
			if m.Type != typ {
				t.Fatalf("%s: %s is a %s mount, want %s", n.Name(), path, m.Type, typ)
			}
			return m.Name
		}
	}
	t.Fatalf("%s: nothing mounted at %s (mounts %+v): the data would live in the writable layer", n.Name(), path, info.Mounts)
	return ""
}

// TestVolumeLifetime: a server's data volume carries the testbed's
// labels, stays the same volume across Kill and Start (so data written
// before a crash is there after it), and is removed with its container.
func TestVolumeLifetime(t *testing.T) {
	RequireDocker(t)
	cli, err := dockerClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var name string
	t.Run("node", func(t *testing.T) {
		n := StartRedis(t, 1, RedisOptions{})[0].Node
		name = requireMount(t, n, redisDataDir, mountVolume)
		vl, err := cli.volumeLabels(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if vl[LabelTestbed] != "true" {
			t.Fatalf("volume %s labels %v: no %s", name, vl, LabelTestbed)
		}
		if err := n.Kill(ctx); err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if got := requireMount(t, n, redisDataDir, mountVolume); got != name {
			t.Fatalf("after Kill and Start the data is on volume %s, was %s", got, name)
		}
	}) // the subtest's cleanup terminated the container
	if _, err := cli.volumeLabels(ctx, name); err == nil {
		t.Fatalf("volume %s outlived its container", name)
	} else if !isNotFound(err) {
		t.Fatalf("inspect volume %s: %v", name, err)
	}
}
