{{/*
inspect.lua reads one lock's state for Inspect and List, and writes
nothing. KEYS[1] the lock, KEYS[2] its wait queue (the fence counter is
not read). It returns the lock's type ("none", "string" or another Redis
type), its PTTL (-2: no key, -1: no expiry), its value ("" unless a
string), then the queue's type, length (0 unless a list) and PTTL. No
field is nil: a Lua table ends at its first nil.
*/ -}}
local t = redis.call('TYPE', KEYS[1]).ok
local v = ''
if t == 'string' then v = redis.call('GET', KEYS[1]) end
local qt = redis.call('TYPE', KEYS[2]).ok
local n = 0
if qt == 'list' then n = redis.call('LLEN', KEYS[2]) end
return {t, redis.call('PTTL', KEYS[1]), v, qt, n, redis.call('PTTL', KEYS[2])}
