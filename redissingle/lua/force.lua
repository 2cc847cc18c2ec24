{{/*
force.lua is ForceRelease: it frees the lock held as ForceRelease read it,
as release.lua does for its holder, handing it to the first live waiter or
deleting it. ARGV[2] is the lock key's type as read and ARGV[3] its value
(a string's): if the key holds anything else now, its holder changed since
the read and is left alone, so that a retried or late script never evicts
a later holder. The fence counter is only incremented by a hand-off. A
wait queue that is not a list is deleted, and one without expiry is given
the queue TTL, ARGV[1] ms. It returns 1 if it freed the lock key, else 0.
*/ -}}
local qt = redis.call('TYPE', KEYS[2]).ok
if qt ~= 'none' and qt ~= 'list' then redis.call('DEL', KEYS[2]) end
if redis.call('PTTL', KEYS[2]) == -1 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' or t ~= ARGV[2] then return 0 end
if t == 'string' and redis.call('GET', KEYS[1]) ~= ARGV[3] then return 0 end
{{template "handoff.lua" .}}
if handoff('') == 0 then redis.call('DEL', KEYS[1]) end
return 1
