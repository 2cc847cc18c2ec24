package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/leader"
)

// candidateEnv carries the backend URL to a test binary re-executed as a
// leader candidate of H2 (serveCandidate).
const candidateEnv = "DISTLOCK_SUITE_CANDIDATE_URL"

// candidateMsg is one line between the parent and a candidate worker.
// Parent to worker: "start" (first, with the campaign's settings),
// "resign", "reply" (to a read or write). Worker to parent: "event" (a
// leadership change, or "ready" when it starts to campaign), "read" and
// "write" (the leader's work on the
// parent's registers, answered by a reply with the same Seq), "resigned"
// (Resign returned).
type candidateMsg struct {
	Op  string
	Seq int64 `json:",omitempty"`

	Key  string        `json:",omitempty"` // start: the election key
	TTL  time.Duration `json:",omitempty"` // start: the lease TTL
	Hold time.Duration `json:",omitempty"` // start: the work's section length

	Kind  string `json:",omitempty"` // event: leader.Kind's name
	Fence uint64 `json:",omitempty"` // event: the term's fence; write: the writer's
	At    int64  `json:",omitempty"` // event, resigned: unix nanos
	Err   string `json:",omitempty"` // resigned: Resign's error

	Plain, Fenced int64 `json:",omitempty"` // read reply: the registers; write: the values read
}

// candidateLink is the worker's side of the pipe: one writer at a time,
// and the read and write calls of the work waiting for their replies.
type candidateLink struct {
	enc *json.Encoder
	seq atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan candidateMsg
	gone    bool // the parent closed the pipe
}

func (w *candidateLink) send(m candidateMsg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(m)
}

// call sends m and waits for its reply, or fails once the parent is gone.
func (w *candidateLink) call(m candidateMsg) (candidateMsg, error) {
	m.Seq = w.seq.Add(1)
	ch := make(chan candidateMsg, 1)
	w.mu.Lock()
	if w.gone {
		w.mu.Unlock()
		return m, errors.New("candidate: parent gone")
	}
	w.pending[m.Seq] = ch
	err := w.enc.Encode(m)
	w.mu.Unlock()
	if err != nil {
		return m, err
	}
	r, ok := <-ch
	if !ok {
		return m, errors.New("candidate: parent gone")
	}
	return r, nil
}

// deliver hands a reply to its call.
func (w *candidateLink) deliver(m candidateMsg) {
	w.mu.Lock()
	ch := w.pending[m.Seq]
	delete(w.pending, m.Seq)
	w.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// close fails every call waiting and every later one.
func (w *candidateLink) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = true
	for seq, ch := range w.pending {
		close(ch)
		delete(w.pending, seq)
	}
}

// serveCandidate runs one leader candidate in this process for the
// parent test: it campaigns for the key of the "start" message until the
// parent closes the pipe, then ends its term (releasing the key) and
// returns.
func serveCandidate(url string, in io.Reader, out io.Writer) int {
	dec := json.NewDecoder(bufio.NewReader(in))
	var start candidateMsg
	if err := dec.Decode(&start); err != nil || start.Op != "start" {
		fmt.Fprintln(os.Stderr, "candidate: no start message:", err)
		return 2
	}
	octx, ocancel := context.WithTimeout(context.Background(), time.Minute)
	locker, err := distlock.Open(octx, url)
	ocancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		return 2
	}
	defer locker.Close()
	w := &candidateLink{enc: json.NewEncoder(out), pending: map[int64]chan candidateMsg{}}
	read := func() (int64, int64, error) {
		r, err := w.call(candidateMsg{Op: "read"})
		return r.Plain, r.Fenced, err
	}
	write := func(p, f int64, fence uint64) error {
		_, err := w.call(candidateMsg{Op: "write", Plain: p, Fenced: f, Fence: fence})
		return err
	}
	observe := func(ev leader.Event) {
		_ = w.send(candidateMsg{Op: "event", Kind: ev.Kind.String(), Fence: ev.Term.Fence, At: ev.At.UnixNano()})
	}
	c, err := leader.NewCandidate(locker, start.Key, leaderWork(read, write, start.Hold), candidateOptions(start.TTL, observe)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		return 2
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	_ = w.send(candidateMsg{Op: "event", Kind: "ready", At: time.Now().UnixNano()})
	wg.Go(func() { _ = c.Run(ctx) })
	for {
		var m candidateMsg
		if err := dec.Decode(&m); err != nil {
			break // the parent closed the pipe
		}
		switch m.Op {
		case "reply":
			w.deliver(m)
		case "resign":
			wg.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				r := candidateMsg{Op: "resigned"}
				if err := c.Resign(rctx); err != nil {
					r.Err = err.Error()
				}
				r.At = time.Now().UnixNano()
				_ = w.send(r)
			})
		}
	}
	stop()
	w.close()
	wg.Wait()
	return 0
}

// candidateProc is a leader candidate in a worker process, serving the
// leader's register calls from the scenario's resources.
type candidateProc struct {
	id       int
	cmd      *exec.Cmd
	in       io.WriteCloser
	read     chan struct{}     // closed when the reader of the worker's output exits
	resigned chan candidateMsg // the worker's answer to "resign"

	mu  sync.Mutex // one writer at a time
	enc *json.Encoder
}

// startCandidate starts a candidate worker for client that campaigns for
// e.key and reports its leadership changes to log.
func startCandidate(e *env, id int, client string, log *eventLog) *candidateProc {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), candidateEnv+"="+e.h.URL(client))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	p := &candidateProc{id: id, cmd: cmd, in: in, enc: json.NewEncoder(in),
		read: make(chan struct{}), resigned: make(chan candidateMsg, 1)}
	go p.serve(e, json.NewDecoder(out), log) // owned: ends at the worker's exit; joined by kill and close
	e.t.Cleanup(func() { p.close() })
	if err := p.send(candidateMsg{Op: "start", Key: e.key, TTL: e.ttl, Hold: leaderHold}); err != nil {
		e.t.Fatalf("candidate %d: %v", id, err)
	}
	return p
}

func (p *candidateProc) send(m candidateMsg) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.enc.Encode(m)
}

// serve answers the worker's calls and records its events until its
// output ends.
func (p *candidateProc) serve(e *env, dec *json.Decoder, log *eventLog) {
	defer close(p.read)
	for {
		var m candidateMsg
		if err := dec.Decode(&m); err != nil {
			return
		}
		switch m.Op {
		case "event":
			log.add(leaderEvent{cand: p.id, kind: m.Kind, fence: m.Fence, at: m.At})
		case "read":
			_ = p.send(candidateMsg{Op: "reply", Seq: m.Seq, Plain: e.plain.read(), Fenced: e.fenced.read()})
		case "write":
			e.plain.write(p.id, m.Fence, m.Plain)
			e.fenced.write(p.id, m.Fence, m.Fenced)
			_ = p.send(candidateMsg{Op: "reply", Seq: m.Seq})
		case "resigned":
			select {
			case p.resigned <- m:
			default:
			}
		}
	}
}

// resign asks the worker to resign and waits for Resign to return.
func (p *candidateProc) resign(ctx context.Context) error {
	if err := p.send(candidateMsg{Op: "resign"}); err != nil {
		return err
	}
	select {
	case m := <-p.resigned:
		if m.Err != "" {
			return errors.New(m.Err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kill SIGKILLs the worker and reaps it: a crashed leader releases
// nothing.
func (p *candidateProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.read
	_ = p.cmd.Wait()
}

// close ends the worker's campaign (EOF on its input: it ends its term,
// releasing the key, and exits), or kills it after campaignEndBound; it
// reports whether the worker exited by itself.
func (p *candidateProc) close() bool {
	if p.cmd.ProcessState != nil {
		return true
	}
	_ = p.in.Close()
	exited := true
	select {
	case <-p.read:
	case <-time.After(campaignEndBound):
		exited = false
		_ = p.cmd.Process.Kill()
		<-p.read
	}
	_ = p.cmd.Wait()
	return exited
}
