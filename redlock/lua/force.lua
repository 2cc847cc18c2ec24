{{/*
KEYS lock, queue. ARGV type, value: the lock's state as inspect.lua read
it. ForceRelease's delete: it deletes the lock if it still has that type
and, for a string, that value (so a holder that took the key since is
left alone), and then wakes the first waiter of the queue as a release
does ("wake"). Returns 1 if it deleted, else 0.
*/ -}}
if redis.call('TYPE', KEYS[1]).ok ~= ARGV[1] then return 0 end
if ARGV[1] == 'string' and redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
{{template "wake" "KEYS[2]"}}
return 1
