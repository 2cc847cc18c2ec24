{{/*
release.lua deletes the lock if it is ours, or hands it to the next live
waiter. ARGV: token. It returns 1, or 0 if the lock was not ours.
*/ -}}
local tok = ARGV[1]
local v = redis.call('GET', KEYS[1])
if v == tok then redis.call('DEL', KEYS[1]) return 1 end
if not v or string.sub(v, 1, #tok + 1) ~= tok .. ':' then return 0 end
{{template "handoff.lua" .}}
if handoff('') == 0 then redis.call('DEL', KEYS[1]) end
return 1
