package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// inspectCallTimeout bounds each Inspect, List and ForceRelease of H4.
const inspectCallTimeout = 5 * time.Second

// inspection is H4's observer: a client of its own that makes every
// Inspect, List and ForceRelease, and the problems and numbers the parts
// of the scenario found, which run concurrently.
type inspection struct {
	e   *env
	obs distlock.Locker
	tr  inspectTraits

	mu       sync.Mutex
	problems []string
	notes    map[string][]string // by part (inspectParts)
	failed   map[string]bool     // parts that found a problem
	metrics  map[string]float64
	reads    int // LockInfo values checked for leaks
}

// inspectParts orders the notes of H4's parts in its detail.
var inspectParts = []string{"judged", "release", "expiry", "crash", "ForceRelease"}

// fail records a problem; its text starts with the name of the part
// that found it (one of inspectParts, or "after the scenario") and a
// colon, and that part's notes are left out of the detail.
func (in *inspection) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	part, _, _ := strings.Cut(msg, ":")
	in.mu.Lock()
	defer in.mu.Unlock()
	in.problems = append(in.problems, msg)
	in.failed[part] = true
}

// note adds to the notes of part (one of inspectParts).
func (in *inspection) note(part, format string, args ...any) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.notes[part] = append(in.notes[part], fmt.Sprintf(format, args...))
}

// noteList returns the notes of the parts that found no problem, in
// inspectParts order.
func (in *inspection) noteList() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for _, p := range inspectParts {
		if !in.failed[p] {
			out = append(out, in.notes[p]...)
		}
	}
	return out
}

// metric records d, in milliseconds, as the metric name.
func (in *inspection) metric(name string, d time.Duration) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.metrics[name] = millis(d)
}

// call runs op with a context bounded by inspectCallTimeout, again while
// it fails with ErrUnavailable (a loaded host can time a request out),
// for up to 2 TTLs.
func (in *inspection) call(op func(ctx context.Context) error) error {
	deadline := time.Now().Add(2 * in.e.ttl)
	for {
		ctx, cancel := context.WithTimeout(in.e.ctx, inspectCallTimeout)
		err := op(ctx)
		cancel()
		if err == nil || !errors.Is(err, distlock.ErrUnavailable) || time.Now().After(deadline) || in.e.ctx.Err() != nil {
			return err
		}
		sleepCtx(in.e.ctx, 20*time.Millisecond)
	}
}

// inspect reads key through the observer and checks the answer for
// leaks; an error is a problem of part (ok false).
func (in *inspection) inspect(part, key string) (info distlock.LockInfo, ok bool) {
	err := in.call(func(ctx context.Context) error {
		var err error
		info, err = distlock.Inspect(ctx, in.obs, key)
		return err
	})
	if err != nil {
		in.fail("%s: Inspect: %v", part, err)
		return info, false
	}
	if info.Key != key {
		in.fail("%s: Inspect(%s) reported Key %s", part, in.name(key), in.name(info.Key))
	}
	in.checkLeak(part, info)
	return info, true
}

// forceRelease force-releases key through the observer, once: a retry
// after a lost reply would find the key free and report false.
func (in *inspection) forceRelease(key string) (held bool, err error) {
	ctx, cancel := context.WithTimeout(in.e.ctx, inspectCallTimeout)
	defer cancel()
	return distlock.ForceRelease(ctx, in.obs, key)
}

// name quotes key for a message, shortened to what follows the
// scenario's key ("…/force/a"); other keys (a pgadvisory id) as they are.
func (in *inspection) name(key string) string {
	if rest, ok := strings.CutPrefix(key, in.e.key+"/"); ok {
		return fmt.Sprintf("%q", "…/"+rest)
	}
	return quoteShort(key)
}

// checkLeak: every lock state H4 sees is the library's own, made by the
// scenario, so none may be reported leaked, on any node.
func (in *inspection) checkLeak(part string, info distlock.LockInfo) {
	in.mu.Lock()
	in.reads++
	in.mu.Unlock()
	if info.Leak != "" {
		in.fail("%s: %s reported leaked (%q), state the library made itself", part, in.name(info.Key), info.Leak)
	}
	for i, n := range info.Nodes {
		if n.Leak != "" {
			in.fail("%s: %s reported leaked on node %d (%q)", part, in.name(info.Key), i, n.Leak)
		}
	}
}

// checkHolder judges the LockInfo of a key the lease with token and fence
// holds, as the backend's documentation says its fields hold.
func (in *inspection) checkHolder(part string, info distlock.LockInfo, token string, fence uint64) {
	if !info.Held {
		in.fail("%s: a held key reported %s", part, fmtInfo(info))
		return
	}
	switch {
	case info.Holder == "":
		in.fail("%s: a held key reported with no Holder", part)
	case in.tr.holderIsToken && info.Holder != distlock.HolderID(token):
		in.fail("%s: Holder %q, want HolderID of the holder's token %q", part, info.Holder, distlock.HolderID(token))
	}
	switch {
	case in.tr.fence == fenceStored && info.Fence != fence,
		in.tr.fence == fenceSometimes && info.Fence != 0 && info.Fence != fence:
		in.fail("%s: Fence %d, want the holder's %d", part, info.Fence, fence)
	case in.tr.fence == fenceZero && info.Fence != 0:
		in.fail("%s: Fence %d, documented as 0", part, info.Fence)
	}
}

// checkFree judges the LockInfo of a key nobody holds.
func (in *inspection) checkFree(part string, info distlock.LockInfo) bool {
	if info.Held || info.Holder != "" || info.Fence != 0 {
		in.fail("%s: %s", part, fmtInfo(info))
		return false
	}
	return true
}

// fmtInfo says what a LockInfo reports about the holder.
func fmtInfo(info distlock.LockInfo) string {
	if !info.Held {
		return fmt.Sprintf("not Held (Holder %q, Fence %d)", info.Holder, info.Fence)
	}
	return fmt.Sprintf("Held by %q (Fence %d)", info.Holder, info.Fence)
}

// listName is the name List gives key: the key itself, or the decimal
// KeyID where the backend keeps no names ("" when the Locker has no
// KeyID method).
func (in *inspection) listName(key string) string {
	if !in.tr.idsOnly {
		return key
	}
	l := in.obs
	for range 8 {
		if k, ok := l.(interface{ KeyID(string) int64 }); ok {
			return strconv.FormatInt(k.KeyID(key), 10)
		}
		u, ok := l.(interface{ Unwrap() distlock.Locker })
		if !ok {
			break
		}
		l = u.Unwrap()
	}
	return ""
}

// list pages through List(prefix) through the observer, one entry a
// page, checking each entry for leaks.
func (in *inspection) list(part, prefix string) ([]distlock.LockInfo, bool) {
	var out []distlock.LockInfo
	page := distlock.Page{Limit: 1}
	for pages := 0; ; pages++ {
		if pages > 20 {
			in.fail("%s: List(%s) did not end after %d pages of 1", part, in.name(prefix), pages)
			return out, false
		}
		var l distlock.Listing
		err := in.call(func(ctx context.Context) error {
			var err error
			l, err = distlock.List(ctx, in.obs, prefix, page)
			return err
		})
		if err != nil {
			in.fail("%s: List(%s): %v", part, in.name(prefix), err)
			return out, false
		}
		if len(l.Locks) > 1 {
			in.fail("%s: List(%s) returned %d entries for a limit of 1", part, in.name(prefix), len(l.Locks))
		}
		for _, info := range l.Locks {
			in.checkLeak(part, info)
			out = append(out, info)
		}
		if l.Next == "" {
			return out, true
		}
		page.Cursor = l.Next
	}
}
