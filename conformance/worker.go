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
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/fencing"
	"github.com/distlock/distlock/migrate"
)

// workerEnv carries the backend URL to a re-executed test binary.
const workerEnv = "DISTLOCK_SUITE_WORKER_URL"

// Main must be called from the TestMain of a test binary that runs the
// suite: in a worker process (a client, or a leader candidate of H2) it
// serves the parent over stdin/stdout and exits; otherwise it runs the
// tests.
func Main(m *testing.M) {
	if url := os.Getenv(workerEnv); url != "" {
		os.Exit(serveWorker(url, os.Stdin, os.Stdout))
	}
	if url := os.Getenv(candidateEnv); url != "" {
		os.Exit(serveCandidate(url, os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

type workerReq struct {
	Op         string // acquire, release, extend, lost, exit
	Key        string
	Try        bool
	TTL        time.Duration
	AutoExtend time.Duration
	RetryMax   time.Duration
	Timeout    time.Duration
}

type workerResp struct {
	Err      string
	Sentinel string // which distlock sentinel the error matched
	Fence    uint64
	Token    string
	// ValidUntil is the lease's validity in unix nanos: worker and parent
	// share the machine's wall clock, so the pipe's latency is not added.
	ValidUntil int64
	Call       int64
	Ret        int64
	Lost       bool
	LostAt     int64
	// FenceFrom and FenceTo are a migrate lease's fence pair
	// (migrate.Fences); both 0 for any other lease.
	FenceFrom, FenceTo uint64
}

var sentinels = []error{distlock.ErrUnavailable, distlock.ErrNotAcquired, distlock.ErrLeaseLost,
	distlock.ErrReleased, distlock.ErrClosed, distlock.ErrInvalidArgument, context.DeadlineExceeded, context.Canceled}

func encodeErr(err error) (string, string) {
	if err == nil {
		return "", ""
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return err.Error(), s.Error()
		}
	}
	return err.Error(), ""
}

func decodeErr(msg, sentinel string) error {
	if msg == "" {
		return nil
	}
	for _, s := range sentinels {
		if s.Error() == sentinel {
			return fmt.Errorf("%w (worker: %s)", s, msg)
		}
	}
	return errors.New(msg)
}

// serveWorker runs one client in this process for the parent test.
func serveWorker(url string, in io.Reader, out io.Writer) int {
	locker, err := distlock.Open(context.Background(), url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	defer locker.Close()
	c := newLocal(0, locker, &History{})
	dec, enc := json.NewDecoder(bufio.NewReader(in)), json.NewEncoder(out)
	for {
		var req workerReq
		if err := dec.Decode(&req); err != nil {
			return 0 // parent closed the pipe
		}
		var resp workerResp
		ctx, cancel := context.WithTimeout(context.Background(), max(req.Timeout, time.Second))
		switch req.Op {
		case "acquire":
			g, err := c.Acquire(ctx, req.Key, acquireReq{Try: req.Try, TTL: req.TTL, AutoExtend: req.AutoExtend, RetryMax: req.RetryMax})
			resp.Err, resp.Sentinel = encodeErr(err)
			resp.Fence, resp.Token, resp.Call, resp.Ret = g.Fence, g.Token, g.Call, g.Ret
			if err == nil {
				resp.ValidUntil = g.ValidUntil.UnixNano()
				c.mu.Lock()
				pair, _ := migrate.Fences(c.lease)
				c.mu.Unlock()
				resp.FenceFrom, resp.FenceTo = pair.From, pair.To
			}
		case "release":
			resp.Lost, resp.LostAt = c.Lost()
			resp.Call = time.Now().UnixNano()
			resp.Err, resp.Sentinel = encodeErr(c.Release(ctx))
			resp.Ret = time.Now().UnixNano()
		case "extend":
			resp.Err, resp.Sentinel = encodeErr(c.Extend(ctx, req.TTL))
		case "lost":
			resp.Lost, resp.LostAt = c.Lost()
		case "exit":
			cancel()
			return 0
		}
		cancel()
		if err := enc.Encode(resp); err != nil {
			return 0
		}
	}
}

// process is a contender in a separate OS process (the test binary
// re-executed), so that SIGSTOP freezes its renewal goroutines too.
type process struct {
	id   int
	hist *History
	cmd  *exec.Cmd
	in   io.WriteCloser
	dec  *json.Decoder

	mu   sync.Mutex // one request at a time
	key  string
	pair fencing.Pair // the held migrate lease's fence pair
}

func startProcess(t testing.TB, id int, url string, h *History) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+url)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{id: id, hist: h, cmd: cmd, in: in, dec: json.NewDecoder(out)}
	t.Cleanup(p.close)
	return p
}

func (p *process) ID() int { return p.id }

// call sends one request and reads its reply. A worker that does not
// answer within the request's timeout plus a minute is killed, so a wedged
// worker fails its scenario instead of hanging the package.
func (p *process) call(req workerReq) (workerResp, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	watchdog := time.AfterFunc(max(req.Timeout, time.Second)+time.Minute, func() { _ = p.cmd.Process.Kill() })
	defer watchdog.Stop()
	var resp workerResp
	if err := json.NewEncoder(p.in).Encode(req); err != nil {
		return resp, fmt.Errorf("worker %d: %w", p.id, err)
	}
	if err := p.dec.Decode(&resp); err != nil {
		return resp, fmt.Errorf("worker %d died: %w", p.id, err)
	}
	return resp, nil
}

func (p *process) Acquire(ctx context.Context, key string, req acquireReq) (grant, error) {
	timeout := time.Minute
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	r, err := p.call(workerReq{Op: "acquire", Key: key, Try: req.Try, TTL: req.TTL, AutoExtend: req.AutoExtend, RetryMax: req.RetryMax, Timeout: timeout})
	if err != nil {
		return grant{}, err
	}
	aerr := decodeErr(r.Err, r.Sentinel)
	op := Op{Client: p.id, Key: key, Kind: OpAcquire, Outcome: outcomeOf(aerr), Fence: r.Fence, Call: r.Call, Return: r.Ret}
	p.hist.Add(op)
	if aerr != nil {
		return grant{}, aerr
	}
	p.mu.Lock()
	p.key, p.pair = key, fencing.Pair{From: r.FenceFrom, To: r.FenceTo}
	p.mu.Unlock()
	return grant{Fence: r.Fence, Token: r.Token, ValidUntil: time.Unix(0, r.ValidUntil), Call: r.Call, Ret: r.Ret}, nil
}

// Pair is the fence pair of the migrate lease the last Acquire granted
// (zero for any other lease).
func (p *process) Pair() fencing.Pair {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pair
}

func (p *process) Lost() (bool, int64) {
	r, err := p.call(workerReq{Op: "lost"})
	if err != nil {
		return false, 0
	}
	return r.Lost, r.LostAt
}

func (p *process) Extend(ctx context.Context, ttl time.Duration) error {
	r, err := p.call(workerReq{Op: "extend", TTL: ttl})
	if err != nil {
		return err
	}
	return decodeErr(r.Err, r.Sentinel)
}

func (p *process) Release(ctx context.Context) error {
	r, err := p.call(workerReq{Op: "release"})
	if err != nil {
		return err
	}
	p.mu.Lock()
	key := p.key
	p.key = ""
	p.mu.Unlock()
	if r.Lost {
		p.hist.Add(Op{Client: p.id, Key: key, Kind: OpLost, Outcome: OutcomeOK, Call: r.LostAt, Return: r.LostAt})
	} else {
		p.hist.Add(Op{Client: p.id, Key: key, Kind: OpRelease, Outcome: OutcomeOK, Call: r.Call, Return: r.Ret})
	}
	return decodeErr(r.Err, r.Sentinel)
}

// Pause freezes the whole client process (SIGSTOP); Resume continues it.
func (p *process) Pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *process) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// Kill SIGKILLs the process and reaps it; its lease is abandoned. A held
// section ends somewhere between the signal and the reaping.
func (p *process) Kill() {
	call := time.Now().UnixNano()
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.mu.Lock()
	key := p.key
	p.key = ""
	p.mu.Unlock()
	if key != "" {
		p.hist.Add(Op{Client: p.id, Key: key, Kind: OpLost, Outcome: OutcomeOK, Call: call, Return: time.Now().UnixNano()})
	}
}

func (p *process) close() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.in.Close() // the worker exits on EOF
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
