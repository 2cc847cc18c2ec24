package redissingle

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts. Each runs atomically on the server, in one round trip,
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
// the scripts are built with TRUST = true and hand over without the check.
//
// Acquisition scripts return one integer: the fence (> 0) if the key is
// now ours, else -(PTTL + 3), the holder's remaining TTL in ms (PTTL -1:
// no TTL; -2 or 0: ask again soon).

// handoffLua defines handoff(self): it pops queue entries until one has a
// live Locker and gives it the lock. It returns 2 and the fence if that
// entry is self (the caller itself is the head), 1 if the lock went to
// another waiter, 0 if no live waiter was found among the first 16 (the
// lock is then left as it was). Scripts define it only in the branches
// that use it, so that the common paths do not pay for the closure.
const handoffLua = `
local function handoff(self)
  for _ = 1, 16 do
    local e = redis.call('LPOP', KEYS[2])
    if not e then return 0 end
    local ch, wid, tok, ttl = string.match(e, '^(.*)|(%x+)|(%x+)|(%d+)$')
    if ch then
      local f = redis.call('INCR', KEYS[3])
      local fs = string.format('%d', f)
      if e == self then
        redis.call('SET', KEYS[1], tok .. ':' .. fs, 'PX', ttl)
        return 2, f
      end
      if redis.call('PUBLISH', ch, wid .. '|' .. fs) > 0 or TRUST then
        redis.call('SET', KEYS[1], tok .. ':' .. fs, 'PX', ttl)
        return 1, f
      end
    end
  end
  return 0
end
`

// acquireLua is the first attempt of Acquire. ARGV: token, ttl ms, entry,
// queue TTL ms. If waiters are queued it queues behind them, and if the
// lock is free meanwhile (its holder expired without a release) it serves
// the queue first: it never takes a free lock ahead of queued waiters.
const acquireLua = `
local tok, ttl, entry = ARGV[1], ARGV[2], ARGV[3]
if redis.call('RPUSHX', KEYS[2], entry) == 0 then
  local v = redis.call('SET', KEYS[1], tok, 'NX', 'PX', ttl, 'GET')
  if not v then return redis.call('INCR', KEYS[3]) end
  if not string.find(v, ':', 1, true) then redis.call('APPEND', KEYS[1], ':') end
  redis.call('RPUSH', KEYS[2], entry)
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
  return -3 - redis.call('PTTL', KEYS[1])
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then return -3 - pttl end
` + handoffLua + `
local r, f = handoff(entry)
if r == 2 then return f end
if r == 1 then return -3 - redis.call('PTTL', KEYS[1]) end
return -3
`

// pollLua is a later attempt of a queued waiter. ARGV as acquireLua. If
// the lock was handed to us (the notification may have been lost), it
// resets its TTL and returns the fence, minting one if the value has none
// (an acquisition whose reply was lost). Otherwise it puts the entry back
// if it is missing, refreshes the queue's TTL, serves the queue if the
// lock is free, and returns -(PTTL + 3).
const pollLua = `
local tok, ttl, entry = ARGV[1], ARGV[2], ARGV[3]
local v = redis.call('GET', KEYS[1])
if v and (v == tok or string.sub(v, 1, #tok + 1) == tok .. ':') then
  local f = tonumber(string.sub(v, #tok + 2))
  if not f then f = redis.call('INCR', KEYS[3]) end
  redis.call('SET', KEYS[1], tok .. ':' .. string.format('%d', f), 'PX', ttl)
  redis.call('LREM', KEYS[2], 1, entry)
  return f
end
if not redis.call('LPOS', KEYS[2], entry) then
  redis.call('RPUSH', KEYS[2], entry)
  if v and not string.find(v, ':', 1, true) then redis.call('APPEND', KEYS[1], ':') end
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if v then return -3 - redis.call('PTTL', KEYS[1]) end
` + handoffLua + `
local r, f = handoff(entry)
if r == 2 then return f end
if r == 1 then return -3 - redis.call('PTTL', KEYS[1]) end
return -3
`

// releaseLua deletes the lock if it is ours, or hands it to the next live
// waiter. ARGV: token. It returns 1, or 0 if the lock was not ours.
const releaseLua = `
local tok = ARGV[1]
local v = redis.call('GET', KEYS[1])
if v == tok then redis.call('DEL', KEYS[1]) return 1 end
if not v or string.sub(v, 1, #tok + 1) ~= tok .. ':' then return 0 end
` + handoffLua + `
if handoff('') == 0 then redis.call('DEL', KEYS[1]) end
return 1
`

// cancelLua is the clean-up of a waiter that gave up, or of an attempt
// whose reply was lost: it removes the entry and, if the lock is ours (it
// was handed over meanwhile), releases it as releaseLua does. ARGV: token,
// entry ("" for none). It returns 1 if the lock was ours, else 0.
const cancelLua = `
local tok = ARGV[1]
if ARGV[2] ~= '' then redis.call('LREM', KEYS[2], 1, ARGV[2]) end
local v = redis.call('GET', KEYS[1])
if not v or (v ~= tok and string.sub(v, 1, #tok + 1) ~= tok .. ':') then return 0 end
` + handoffLua + `
if handoff('') == 0 then redis.call('DEL', KEYS[1]) end
return 1
`

// extendScript resets the lock's TTL if it is ours, and never re-creates
// it. KEYS[1]: the lock. ARGV: the token (matches the value token or
// token:fence) or a whole value token:fence (matches only it), ttl ms. It
// returns 1, or 0 if the lock is gone or someone else's.
var extendScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and (v == ARGV[1] or string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':') then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)

// tryScript is TryAcquire's attempt: SET NX PX and a fence. KEYS as the
// other scripts; ARGV: token, ttl ms. It returns the fence, or -1 if the
// lock is held. It does not wait behind the queue: a TryAcquire can take a
// key whose holder expired before a queued waiter polls for it (see
// Guarantees). But if a queue exists it marks the value "token:", as a
// waiter that queues does, so that its release hands the key on.
var tryScript = redis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('APPEND', KEYS[1], ':') end
return redis.call('INCR', KEYS[3])
`)

// scriptSet is the scripts of one deployment kind.
type scriptSet struct {
	acquire, poll, release, cancel *redis.Script
}

// scriptSets[0] is for standalone and Sentinel, [1] for Cluster.
var scriptSets = [2]*scriptSet{newScriptSet("false"), newScriptSet("true")}

func newScriptSet(trust string) *scriptSet {
	s := func(src string) *redis.Script { return redis.NewScript(strings.ReplaceAll(src, "TRUST", trust)) }
	return &scriptSet{acquire: s(acquireLua), poll: s(pollLua), release: s(releaseLua), cancel: s(cancelLua)}
}
