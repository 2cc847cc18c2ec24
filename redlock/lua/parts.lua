{{/*
The parts the scripts share, as templates, so that each script is one
self-contained Lua chunk (a script that defined a Lua function for a
shared part would create it on every call).

"wake" wakes the first waiter of the queue named by its argument (a KEYS
entry) whose Locker is subscribed: it pops entries until one's channel
has a subscriber, which is told the waiter's ID and the lock (KEYS[1]) as
"id|lock". If that waiter is no longer waiting (it gave up or won, and
its leaving of the queue has not landed yet), its Locker passes the
wake-up on (see Locker.passOn), so it reaches a waiting waiter.
*/}}{{define "wake"}}
for _ = 1, 16 do
  local e = redis.call('ZPOPMIN', {{.}})
  if #e == 0 then break end
  local ch, wid = string.match(e[1], '^(.*)|(%x+)$')
  if ch and redis.call('PUBLISH', ch, wid .. '|' .. KEYS[1]) > 0 then break end
end
{{end}}{{/*

"setmax" defines setmax(f): fence counter KEYS[2] = max(counter, f).
*/}}{{define "setmax"}}
local function setmax(f)
  if f > 0 and (tonumber(redis.call('GET', KEYS[2])) or 0) < f then
    redis.call('SET', KEYS[2], string.format('%d', f))
  end
end
{{end}}{{/*

"release" is the compare-and-delete of KEYS[1] against ARGV[1]; if it
deleted, it wakes the first waiter of the queue named by its argument
("wake"). Returns 1 if it deleted, else 0.
*/}}{{define "release"}}
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
{{template "wake" .}}
return 1{{end}}
