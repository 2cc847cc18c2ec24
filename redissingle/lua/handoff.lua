{{/*
handoff.lua defines handoff(self), included by the scripts that hand the
lock on: it pops queue entries until one has a live Locker and gives it
the lock. It returns 2 and the fence if that entry is self (the caller
itself is the head), 1 if the lock went to another waiter, 0 if no live
waiter was found among the first 16 (the lock is then left as it was).
Scripts include it only in the branches that use it, so that the common
paths do not pay for the closure. .Trust (true in Cluster) hands over
without checking that the entry's channel has a subscriber.
*/ -}}
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
      if redis.call('PUBLISH', ch, wid .. '|' .. fs) > 0 or {{.Trust}} then
        redis.call('SET', KEYS[1], tok .. ':' .. fs, 'PX', ttl)
        return 1, f
      end
    end
  end
  return 0
end
