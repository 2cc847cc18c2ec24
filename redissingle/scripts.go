package redissingle

import (
	"embed"
	"strings"
	"text/template"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, in lua/*.lua. Each runs atomically on the server, in one round trip,
// over the three keys of one lock (keys.go): KEYS[1] the lock, KEYS[2] its
// wait queue, KEYS[3] the fence counter.
//
// The lock's value is the holder's token. A waiter that queues appends ":"
// to it, and a holder that takes the key while a queue exists writes
// "token:", so that a release without waiters stays a plain
// compare-and-delete (no queue lookup) and every release with waiters hands
// the key on; a lock handed to a waiter is "token:fence", so that the
// waiter can recover its fence by polling if the notification was lost. A
// value is ours if it is the token or starts with token + ":".
//
// A queue entry is "channel|waiter|token|ttl ms". The releasing script
// itself hands the lock to the head entry (SET token:fence PX ttl, with a
// fence minted in the same script) and PUBLISHes "waiter|fence" on the
// channel of that waiter's Locker: one message per hand-off, to one Locker,
// and the woken waiter owns the key without another request. An entry whose
// channel has no subscriber (its process died) is skipped, except in
// Cluster, where PUBLISH counts only the local node's subscribers: there
// the scripts are rendered with .Trust true and hand over without the check.
//
// Acquisition scripts return one integer: the fence (> 0) if the key is
// now ours, else -(PTTL + 3), the holder's remaining TTL in ms (PTTL -1:
// no TTL; -2 or 0: ask again soon).
//
// Each file is a text/template, rendered once when the package is
// initialised: {{template "handoff.lua" .}} includes the hand-off function
// where a script uses it, and {{.Trust}} is false or true as above. Each
// file opens with a template comment saying what the script does, its
// ARGV and its reply; the comment is not sent to the server.

//go:embed lua/*.lua
var luaFiles embed.FS

var luaTemplates = template.Must(template.ParseFS(luaFiles, "lua/*.lua"))

// luaScript renders the script of file name (in lua/) for trust.
func luaScript(name string, trust bool) *redis.Script {
	var b strings.Builder
	if err := luaTemplates.ExecuteTemplate(&b, name, struct{ Trust bool }{trust}); err != nil {
		panic("redissingle: render " + name + ": " + err.Error()) // the embedded files are fixed: not reached
	}
	return redis.NewScript(b.String())
}

// extendScript (extend.lua) resets the lock's TTL if it is ours, and never
// re-creates it; tryScript (try.lua) is TryAcquire's attempt. Neither
// hands the lock on, so one of each serves every deployment kind.
var (
	extendScript = luaScript("extend.lua", false)
	tryScript    = luaScript("try.lua", false)
)

// scriptSet is the scripts of one deployment kind: acquire.lua, poll.lua,
// release.lua and cancel.lua.
type scriptSet struct {
	acquire, poll, release, cancel *redis.Script
}

// scriptSets[0] is for standalone and Sentinel, [1] for Cluster.
var scriptSets = [2]*scriptSet{newScriptSet(false), newScriptSet(true)}

func newScriptSet(trust bool) *scriptSet {
	return &scriptSet{
		acquire: luaScript("acquire.lua", trust),
		poll:    luaScript("poll.lua", trust),
		release: luaScript("release.lua", trust),
		cancel:  luaScript("cancel.lua", trust),
	}
}
