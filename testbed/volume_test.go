package testbed

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

func TestDataVolumes(t *testing.T) {
	got := dataVolumes([]string{"/data", "/var/lib/x"}, map[string]string{"/var/lib/x": "rw"})
	want := []mount.Mount{{Type: mount.TypeVolume, Target: "/data"}}
	if !slices.Equal(got, want) {
		t.Fatalf("dataVolumes = %+v, want %+v (a tmpfs path gets no volume)", got, want)
	}
	if got := dataVolumes(nil, nil); len(got) != 0 {
		t.Fatalf("dataVolumes(nil) = %+v", got)
	}
}

// requireMount fails t unless n's container mounts a mount of type typ
// at path: the server's data is on a volume (or tmpfs), not in the
// container's writable layer (see dataVolumes).
func requireMount(t *testing.T, n *Node, path string, typ mount.Type) {
	t.Helper()
	cli, err := dockerClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := cli.ContainerInspect(ctx, n.ContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range info.Container.Mounts {
		if m.Destination == path {
			if m.Type != typ {
				t.Fatalf("%s: %s is a %s mount, want %s", n.Name(), path, m.Type, typ)
			}
			return
		}
	}
	t.Fatalf("%s: nothing mounted at %s (mounts %+v): the data would live in the writable layer", n.Name(), path, info.Container.Mounts)
}
