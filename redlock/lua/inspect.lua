{{/*
KEYS lock, queue of each lock read, in pairs. Read-only. Returns four
values per pair: the lock's type ("none", "string", or another Redis
type), its PTTL (-2: none, -1: no expiry), the length of its wait queue
(0 unless the queue is a sorted set) and its value ("" unless it is a
string). The value comes last: a Lua table ends at its first nil, so no
field is ever nil.
*/ -}}
local out = {}
for i = 1, #KEYS, 2 do
  local t = redis.call('TYPE', KEYS[i]).ok
  local v = ''
  if t == 'string' then v = redis.call('GET', KEYS[i]) end
  local w = 0
  if redis.call('TYPE', KEYS[i + 1]).ok == 'zset' then w = redis.call('ZCARD', KEYS[i + 1]) end
  out[#out + 1] = t
  out[#out + 1] = redis.call('PTTL', KEYS[i])
  out[#out + 1] = w
  out[#out + 1] = v
end
return out
