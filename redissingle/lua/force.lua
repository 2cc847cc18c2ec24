{{/*
force.lua is ForceRelease: it frees the lock whoever holds it, as
release.lua does for its holder, handing it to the first live waiter or
deleting it. The fence counter is only incremented by a hand-off. A wait
queue that is not a list is deleted, and one without expiry is given the
queue TTL, ARGV[1] ms. It returns 1 if the lock key existed, else 0.
*/ -}}
local qt = redis.call('TYPE', KEYS[2]).ok
if qt ~= 'none' and qt ~= 'list' then redis.call('DEL', KEYS[2]) end
if redis.call('PTTL', KEYS[2]) == -1 then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
{{template "handoff.lua" .}}
if handoff('') == 0 then redis.call('DEL', KEYS[1]) end
return 1
