// A small Docker Engine API client written with the standard library: HTTP
// over the daemon's Unix socket (or TCP), JSON bodies, the few calls the
// testbed makes. It keeps the testbed, which every backend's tests import,
// free of container tooling modules, so a program that imports the library
// lists none in its go.sum.

package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// engineAPIVersion is the Engine API version the requests use (Docker
// 20.10 and later serve it), unless the daemon's minimum is higher.
const engineAPIVersion = "1.41"

// engineCallTimeout bounds an engine call whose context has no deadline.
const engineCallTimeout = 60 * time.Second

// engine is a client of one Docker daemon.
type engine struct {
	hc      *http.Client
	base    string // "http://docker" or "http://host:port"
	host    string // where published ports are reached, e.g. "127.0.0.1"
	bindIP  string // host address ports are published on
	version string // API version in the request paths, e.g. "1.41"
}

// engineError is a daemon's answer with an error status.
type engineError struct {
	method, path string
	status       int
	message      string
}

func (e *engineError) Error() string {
	return fmt.Sprintf("docker %s %s: %d %s", e.method, e.path, e.status, e.message)
}

// isNotFound reports whether err is the daemon's 404: no such container,
// network, volume, image or exec.
func isNotFound(err error) bool {
	var ee *engineError
	return errors.As(err, &ee) && ee.status == http.StatusNotFound
}

// newEngine connects to the daemon DOCKER_HOST names (unix:// or tcp://;
// unset: unix:///var/run/docker.sock), and picks the API version. It fails
// if the daemon does not answer within ctx.
func newEngine(ctx context.Context) (*engine, error) {
	e := &engine{host: "127.0.0.1", bindIP: "127.0.0.1"}
	tr := &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}
	dh := os.Getenv("DOCKER_HOST")
	if dh == "" {
		dh = "unix:///var/run/docker.sock"
	}
	u, err := url.Parse(dh)
	if err != nil {
		return nil, fmt.Errorf("DOCKER_HOST: %w", err)
	}
	switch u.Scheme {
	case "unix":
		sock := u.Path
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}
		e.base = "http://docker"
	case "tcp":
		if u.Host == "" {
			return nil, errors.New("DOCKER_HOST: tcp:// without host:port")
		}
		e.base = "http://" + u.Host
		if h := u.Hostname(); !isLoopback(h) {
			e.host, e.bindIP = h, "0.0.0.0" // a remote daemon: ports must be reachable from here
		}
	default:
		return nil, fmt.Errorf("DOCKER_HOST scheme %q: want unix:// or tcp://", u.Scheme)
	}
	e.hc = &http.Client{Transport: tr}
	var v struct{ APIVersion, MinAPIVersion string }
	if err := e.call(ctx, http.MethodGet, "/version", nil, nil, &v); err != nil {
		return nil, err
	}
	e.version, err = pickAPIVersion(v.MinAPIVersion, v.APIVersion)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pickAPIVersion returns engineAPIVersion if the daemon serves it, else
// the daemon's minimum when that is higher; it fails on an older daemon.
func pickAPIVersion(minV, maxV string) (string, error) {
	switch {
	case maxV != "" && versionLess(maxV, engineAPIVersion):
		return "", fmt.Errorf("docker API %s is older than %s: upgrade the Docker daemon", maxV, engineAPIVersion)
	case minV != "" && versionLess(engineAPIVersion, minV):
		return minV, nil
	}
	return engineAPIVersion, nil
}

// versionLess compares "major.minor" API versions.
func versionLess(a, b string) bool {
	pa, pb := strings.SplitN(a, ".", 2), strings.SplitN(b, ".", 2)
	for i := range 2 {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// request sends one API request: body, if not nil, is sent as JSON unless
// it is an io.Reader (sent as is, as a tar archive). A status of 400 or
// more is an *engineError. The caller closes the response body. Without a
// deadline on ctx the call is bounded by engineCallTimeout; the returned
// cancel releases it and must be called after the body is read.
func (e *engine) request(ctx context.Context, method, path string, query url.Values, body any) (*http.Response, context.CancelFunc, error) {
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, engineCallTimeout)
	}
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd, ctype = b, "application/x-tar"
	default:
		js, err := json.Marshal(b)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("docker %s %s: %w", method, path, err)
		}
		rd, ctype = bytes.NewReader(js), "application/json"
	}
	u := e.base
	if e.version != "" {
		u += "/v" + e.version
	}
	u += path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("docker %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		defer cancel()
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var m struct{ Message string }
		if json.Unmarshal(b, &m) != nil || m.Message == "" {
			m.Message = strings.TrimSpace(string(b))
		}
		return nil, nil, &engineError{method: method, path: path, status: resp.StatusCode, message: m.Message}
	}
	return resp, cancel, nil
}

// call sends one request and decodes its JSON answer into out (nil:
// discarded).
func (e *engine) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	resp, cancel, err := e.request(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	if err != nil {
		return fmt.Errorf("docker %s %s: read answer: %w", method, path, err)
	}
	return nil
}

// ping checks that the daemon answers.
func (e *engine) ping(ctx context.Context) error {
	return e.call(ctx, http.MethodGet, "/_ping", nil, nil, nil)
}

// imagePresent reports whether the image ref is present locally.
func (e *engine) imagePresent(ctx context.Context, ref string) (bool, error) {
	err := e.call(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil, nil)
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, err
}

// labelFilter is the filters query parameter that selects resources
// carrying label (a "key=value" or "key").
func labelFilter(label string) url.Values {
	js, _ := json.Marshal(map[string][]string{"label": {label}})
	return url.Values{"filters": {string(js)}}
}
