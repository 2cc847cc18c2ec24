{{/*
KEYS lock, fence counter, queue. ARGV token, ttl ms, queue entry ("" for
none), arrival score, queue ttl ms. SET NX PX and, if it took the key,
INCR the counter and leave the queue: returns the counter (> 0). Else it
queues the entry and returns -3 - PTTL (<= -1).
*/}}
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if ARGV[3] ~= '' then redis.call('ZREM', KEYS[3], ARGV[3]) end
  return redis.call('INCR', KEYS[2])
end
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
return -3 - redis.call('PTTL', KEYS[1])
