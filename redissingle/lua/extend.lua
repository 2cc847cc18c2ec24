{{/*
extend.lua resets the lock's TTL if it is ours, and never re-creates it.
KEYS[1]: the lock. ARGV: the token (matches the value token or
token:fence) or a whole value token:fence (matches only it), ttl ms. It
returns 1, or 0 if the lock is gone or someone else's.
*/ -}}
local v = redis.call('GET', KEYS[1])
if v and (v == ARGV[1] or string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ':') then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
