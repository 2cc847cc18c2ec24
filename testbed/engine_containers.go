// Engine API calls on containers: create, start, stop, kill, pause,
// inspect, logs, file upload, list and remove.

package testbed

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// containerConfig is the body of POST /containers/create.
type containerConfig struct {
	Image            string
	Cmd              []string            `json:",omitempty"`
	Env              []string            `json:",omitempty"`
	Labels           map[string]string   `json:",omitempty"`
	ExposedPorts     map[string]struct{} `json:",omitempty"`
	HostConfig       hostConfig
	NetworkingConfig *networkingConfig `json:",omitempty"`
}

// hostConfig is the part of a container's configuration that depends on
// the host.
type hostConfig struct {
	NetworkMode  string                   `json:",omitempty"`
	CapAdd       []string                 `json:",omitempty"`
	Mounts       []mountSpec              `json:",omitempty"`
	Tmpfs        map[string]string        `json:",omitempty"`
	PortBindings map[string][]portBinding `json:",omitempty"`
}

// portBinding is where a container port is published on the host.
type portBinding struct {
	HostIP   string `json:"HostIp"`
	HostPort string
}

// Mount types of mountSpec.Type and containerInfo.Mounts.
const (
	mountVolume = "volume"
	mountTmpfs  = "tmpfs"
)

// mountSpec is one mount of a container; a "volume" mount without a
// source is an anonymous volume, removed with the container.
type mountSpec struct {
	Type          string
	Target        string
	VolumeOptions *volumeOptions `json:",omitempty"`
}

// volumeOptions are the options of a volume created for a mount.
type volumeOptions struct {
	Labels map[string]string `json:",omitempty"`
}

// networkingConfig attaches a container to networks at creation; API 1.41
// takes one network here, the others are connected after creation.
type networkingConfig struct {
	EndpointsConfig map[string]*endpointSettings
}

// endpointSettings configures a container's endpoint on one network.
type endpointSettings struct {
	Aliases    []string      `json:",omitempty"`
	IPAMConfig *endpointIPAM `json:",omitempty"`
}

// endpointIPAM asks for a fixed address on a network.
type endpointIPAM struct {
	IPv4Address string `json:",omitempty"`
}

// containerInfo is the part of GET /containers/{id}/json the testbed reads.
type containerInfo struct {
	ID    string `json:"Id"`
	State struct {
		Status   string // "created", "running", "paused", "exited", "dead", ...
		ExitCode int
	}
	NetworkSettings struct {
		Ports    map[string][]portBinding
		Networks map[string]*struct{ IPAddress string }
	}
	Mounts []struct{ Type, Name, Destination string }
}

// containerCreate creates a container and returns its ID.
func (e *engine) containerCreate(ctx context.Context, cfg containerConfig) (string, error) {
	var out struct {
		ID string `json:"Id"`
	}
	if err := e.call(ctx, http.MethodPost, "/containers/create", nil, cfg, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// containerStart starts a created or exited container.
func (e *engine) containerStart(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/start", nil, nil, nil)
}

// containerKill sends signal (e.g. "KILL") to the container's main process.
func (e *engine) containerKill(ctx context.Context, id, signal string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/kill", url.Values{"signal": {signal}}, nil, nil)
}

// containerStop sends SIGTERM, then SIGKILL after timeoutSec seconds.
func (e *engine) containerStop(ctx context.Context, id string, timeoutSec int) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/stop", url.Values{"t": {strconv.Itoa(timeoutSec)}}, nil, nil)
}

// containerPause freezes the container's processes.
func (e *engine) containerPause(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/pause", nil, nil, nil)
}

// containerUnpause resumes a paused container.
func (e *engine) containerUnpause(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodPost, "/containers/"+id+"/unpause", nil, nil, nil)
}

// containerRemove removes a container, running or not, with its anonymous
// volumes.
func (e *engine) containerRemove(ctx context.Context, id string) error {
	return e.call(ctx, http.MethodDelete, "/containers/"+id, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
}

// containerInspect reads a container's state, ports, networks and mounts.
func (e *engine) containerInspect(ctx context.Context, id string) (containerInfo, error) {
	var info containerInfo
	err := e.call(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil, &info)
	return info, err
}

// containerLogs returns the last tail lines of the container's stdout and
// stderr, interleaved as written.
func (e *engine) containerLogs(ctx context.Context, id string, tail int) ([]byte, error) {
	q := url.Values{"stdout": {"1"}, "stderr": {"1"}, "tail": {strconv.Itoa(tail)}}
	resp, cancel, err := e.request(ctx, http.MethodGet, "/containers/"+id+"/logs", q, nil)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	var buf bytes.Buffer
	err = demux(&buf, resp.Body)
	return buf.Bytes(), err
}

// containerUpload writes files into the container's file system (owned by
// root, missing parent directories created); the container need not run.
func (e *engine) containerUpload(ctx context.Context, id string, files []fileSpec) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean(f.path), "/")
		if !path.IsAbs(f.path) || name == "" {
			return fmt.Errorf("container file path %q: want an absolute file path", f.path)
		}
		hdr := &tar.Header{Name: name, Mode: f.mode, Size: int64(len(f.content)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, f.content); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return e.call(ctx, http.MethodPut, "/containers/"+id+"/archive", url.Values{"path": {"/"}}, &buf, nil)
}

// containerSummary is one entry of GET /containers/json.
type containerSummary struct {
	ID    string `json:"Id"`
	Names []string
	State string
}

// containerList lists all containers (running or not) carrying label.
func (e *engine) containerList(ctx context.Context, label string) ([]containerSummary, error) {
	q := labelFilter(label)
	q.Set("all", "1")
	var out []containerSummary
	err := e.call(ctx, http.MethodGet, "/containers/json", q, nil, &out)
	return out, err
}
