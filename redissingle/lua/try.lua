{{/*
try.lua is TryAcquire's attempt: SET NX PX and a fence. KEYS as the other
scripts; ARGV: token, ttl ms. It returns the fence, or -1 if the lock is
held. It does not wait behind the queue: a TryAcquire can take a key
whose holder expired before a queued waiter polls for it (see
Locker.Guarantees). But if a queue exists it marks the value "token:", as
a waiter that queues does, so that its release hands the key on.
*/ -}}
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('APPEND', KEYS[1], ':') end
return redis.call('INCR', KEYS[3])
