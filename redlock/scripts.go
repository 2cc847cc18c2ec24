package redlock

import (
	"crypto/sha1"
	"encoding/hex"
)

// The Lua scripts, loaded (SCRIPT LOAD) on every new connection and run
// with EVALSHA. Each runs atomically on one node, on the keys of one lock
// (see keys.go).

// acquireLua: KEYS lock, fence counter, queue. ARGV token, ttl ms, queue
// entry ("" for none), arrival score, queue ttl ms. SET NX PX and, if it
// took the key, INCR the counter and leave the queue: returns the counter
// (> 0). Else it queues the entry and returns -3 - PTTL (<= -1).
const acquireLua = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] ~= '' then redis.call('ZREM', KEYS[3], ARGV[3]) end
  return redis.call('INCR', KEYS[2])
end
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
return -3 - redis.call('PTTL', KEYS[1])
`

// wakeLoop is the code that wakes the first waiter of queue q (a KEYS
// entry) whose Locker is subscribed: pop entries until one's channel has
// a subscriber, which is told the waiter's ID and the lock (KEYS[1]) as
// "id|lock". If that waiter is no longer waiting (it gave up or won, and
// its leaving of the queue has not landed yet), its Locker passes the
// wake-up on (see Locker.passOn), so it reaches a waiting waiter. It is
// inlined where used, not defined as a Lua function: a script that
// defines a function creates it on every call.
func wakeLoop(q string) string {
	return `
for _ = 1, 16 do
  local e = redis.call('ZPOPMIN', ` + q + `)
  if #e == 0 then break end
  local ch, wid = string.match(e[1], '^(.*)|(%x+)$')
  if ch and redis.call('PUBLISH', ch, wid .. '|' .. KEYS[1]) > 0 then break end
end
`
}

// setMaxLua defines setmax(f): counter = max(counter, f).
const setMaxLua = `
local function setmax(f)
  if f > 0 and (tonumber(redis.call('GET', KEYS[2])) or 0) < f then
    redis.call('SET', KEYS[2], string.format('%d', f))
  end
end
`

// releaseBody: compare-and-delete of KEYS[1] against ARGV[1]; if it
// deleted, wake the first waiter of queue q (wakeLoop). Returns 1 if it deleted,
// else 0.
func releaseBody(q string) string {
	return `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
` + wakeLoop(q) + `
return 1
`
}

// releaseLua: KEYS lock, queue. ARGV token. The release of a lease whose
// fence every granting node already had, and the unlock of a failed
// acquisition: only two keys and one argument, since a script's cost
// grows with them (3 keys and 2 arguments cost Redis about 1 us more per
// call than 1 and 1; on 5 nodes that is a few percent of B1).
var releaseLua = releaseBody("KEYS[2]")

// releaseFencedLua: KEYS lock, counter, queue. ARGV token, fence. Raise
// the counter to the fence, then as releaseLua.
var releaseFencedLua = setMaxLua + `
setmax(tonumber(ARGV[2]))
` + releaseBody("KEYS[3]")

// extendLua: KEYS lock, counter. ARGV token, ttl ms, fence.
// Compare-and-PEXPIRE (never re-creates the key) and raise the counter.
// Returns 1 if the key was ours, else 0.
const extendLua = setMaxLua + `
setmax(tonumber(ARGV[3]))
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`

// fenceLua: KEYS lock (unused), counter. ARGV fence. The write-back of a
// new lease's fence to the nodes whose counter was below it.
const fenceLua = setMaxLua + `
setmax(tonumber(ARGV[1]))
return 1
`

// leaveLua: KEYS lock, counter (unused), queue. ARGV entry. A waiter that
// gave up or won leaves the queue; if the key is free meanwhile, the next
// waiter is woken in its place. It also passes on a wake-up that reached
// a waiter no longer waiting (its entry already popped: the ZREM finds
// nothing).
var leaveLua = `
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
` + wakeLoop("KEYS[3]") + `
end
return 1
`

type script struct{ src, sha string }

func newScript(src string) *script {
	h := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(h[:])}
}

var (
	acquireScript = newScript(acquireLua)
	releaseScript = newScript(releaseLua)
	releaseFenced = newScript(releaseFencedLua)
	extendScript  = newScript(extendLua)
	fenceScript   = newScript(fenceLua)
	leaveScript   = newScript(leaveLua)
	allScripts    = []*script{acquireScript, releaseScript, releaseFenced, extendScript, fenceScript, leaveScript}
)
