{{/*
cancel.lua is the clean-up of a waiter that gave up, or of an attempt
whose reply was lost: it removes the entry and, if the lock is ours (it
was handed over meanwhile), releases it as release.lua does. ARGV: token,
entry ("" for none). It returns 1 if the lock was ours, else 0.
*/ -}}
local tok = ARGV[1]
if ARGV[2] ~= '' then redis.call('LREM', KEYS[2], 1, ARGV[2]) end
local v = redis.call('GET', KEYS[1])
if not v or (v ~= tok and string.sub(v, 1, #tok + 1) ~= tok .. ':') then return 0 end
{{template "handoff.lua" .}}
if handoff('') == 0 then redis.call('DEL', KEYS[1]) end
return 1
