{{/*
acquire.lua is the first attempt of Acquire. ARGV: token, ttl ms, entry,
queue TTL ms. If waiters are queued it queues behind them, and if the
lock is free meanwhile (its holder expired without a release) it serves
the queue first: it never takes a free lock ahead of queued waiters.
*/ -}}
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
{{template "handoff.lua" .}}
local r, f = handoff(entry)
if r == 2 then return f end
if r == 1 then return -3 - redis.call('PTTL', KEYS[1]) end
return -3
