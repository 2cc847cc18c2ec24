// Engine API exec: run a command in a running container and collect its
// exit code and output.

package testbed

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxStreamFrame bounds one frame of a multiplexed stream, so that a
// corrupt header cannot make demux allocate without limit.
const maxStreamFrame = 16 << 20

// containerExec runs cmd in the running container id, without a TTY, and
// returns its exit code and its stdout and stderr, interleaved as written.
// A non-zero exit code is not an error.
func (e *engine) containerExec(ctx context.Context, id string, cmd []string) (int, []byte, error) {
	var created struct {
		ID string `json:"Id"`
	}
	body := map[string]any{"AttachStdout": true, "AttachStderr": true, "Tty": false, "Cmd": cmd}
	if err := e.call(ctx, http.MethodPost, "/containers/"+id+"/exec", nil, body, &created); err != nil {
		return 0, nil, err
	}
	// Without an Upgrade header the daemon answers 200 and streams the
	// output until the command ends, then closes the connection.
	resp, cancel, err := e.request(ctx, http.MethodPost, "/exec/"+created.ID+"/start", nil, map[string]bool{"Detach": false, "Tty": false})
	if err != nil {
		return 0, nil, err
	}
	var out bytes.Buffer
	err = demux(&out, resp.Body)
	resp.Body.Close()
	cancel()
	if err != nil {
		return 0, out.Bytes(), fmt.Errorf("docker exec %v: read output: %w", cmd, err)
	}
	// The stream ends as the process exits; the daemon may record the exit
	// code a moment later.
	for {
		var st struct {
			Running  bool
			ExitCode int
		}
		if err := e.call(ctx, http.MethodGet, "/exec/"+created.ID+"/json", nil, nil, &st); err != nil {
			return 0, out.Bytes(), err
		}
		if !st.Running {
			return st.ExitCode, out.Bytes(), nil
		}
		select {
		case <-ctx.Done():
			return 0, out.Bytes(), fmt.Errorf("docker exec %v: wait for exit code: %w", cmd, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// demux copies the payload of a multiplexed stream (the output of a
// container without a TTY: frames of an 8-byte header, whose first byte
// names the stream and last four are the payload's big-endian length,
// followed by the payload) to w, stdout and stderr alike, until EOF.
func demux(w io.Writer, r io.Reader) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("stream header: %w", err)
		}
		switch hdr[0] {
		case 0, 1, 2, 3: // stdin, stdout, stderr, systemerr
		default:
			return fmt.Errorf("stream header %x: unknown stream %d", hdr, hdr[0])
		}
		n := binary.BigEndian.Uint32(hdr[4:])
		if n > maxStreamFrame {
			return fmt.Errorf("stream frame of %d bytes: more than %d", n, maxStreamFrame)
		}
		if _, err := io.CopyN(w, r, int64(n)); err != nil {
			return fmt.Errorf("stream frame: %w", err)
		}
	}
}
