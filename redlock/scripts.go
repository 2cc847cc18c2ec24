package redlock

import (
	"crypto/sha1"
	"encoding/hex"
)

// The Lua scripts, loaded (SCRIPT LOAD) on every new connection and run
// with EVALSHA. Each runs atomically on one node. Keys of a lock k, with
// Options.Prefix p: the lock p+k (its value is the holder's token, so
// redsync and other Redlock clients on the same key exclude us and we them),
// its wait queue p+"distlock:q:"+k, and the node's fence counter
// p+"distlock:fence", shared by every key.
//
// The wait queue is a sorted set of "channel|waiter" entries scored by the
// waiter's arrival time, so that every node orders the same waiters the same
// way and a release on all nodes wakes the same waiter on each.

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

// wakeLua defines wake(): pop queue entries until one's channel has a
// subscriber, which is told the waiter's ID.
const wakeLua = `
local function wake()
  for _ = 1, 16 do
    local e = redis.call('ZPOPMIN', KEYS[3])
    if #e == 0 then return end
    local ch, wid = string.match(e[1], '^(.*)|(%x+)$')
    if ch and redis.call('PUBLISH', ch, wid) > 0 then return end
  end
end
`

// setMaxLua defines setmax(f): counter = max(counter, f).
const setMaxLua = `
local function setmax(f)
  if f > 0 and (tonumber(redis.call('GET', KEYS[2])) or 0) < f then
    redis.call('SET', KEYS[2], string.format('%d', f))
  end
end
`

// releaseLua: KEYS lock, counter, queue. ARGV token, fence (0: none).
// Compare-and-delete; if it deleted, wake the first live waiter. Raise the
// counter to the fence. Returns 1 if it deleted, else 0.
const releaseLua = wakeLua + setMaxLua + `
setmax(tonumber(ARGV[2]))
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  wake()
  return 1
end
return 0
`

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
// gave up leaves the queue; if the key is free meanwhile, the next waiter
// is woken in its place.
const leaveLua = wakeLua + `
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then wake() end
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
	extendScript  = newScript(extendLua)
	fenceScript   = newScript(fenceLua)
	leaveScript   = newScript(leaveLua)
	allScripts    = []*script{acquireScript, releaseScript, extendScript, fenceScript, leaveScript}
)
