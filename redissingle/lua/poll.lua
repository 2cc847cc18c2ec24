{{/*
poll.lua is a later attempt of a queued waiter. ARGV as acquire.lua. If
the lock was handed to us (the notification may have been lost), it
resets its TTL and returns the fence, minting one if the value has none
(an acquisition whose reply was lost). Otherwise it puts the entry back
if it is missing, refreshes the queue's TTL, serves the queue if the lock
is free, and returns -(PTTL + 3).
*/ -}}
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
{{template "handoff.lua" .}}
local r, f = handoff(entry)
if r == 2 then return f end
if r == 1 then return -3 - redis.call('PTTL', KEYS[1]) end
return -3
