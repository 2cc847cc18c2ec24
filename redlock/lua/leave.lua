{{/*
KEYS lock, fence counter (unused), queue. ARGV entry. A waiter that gave
up or won leaves the queue; if the key is free meanwhile, the next waiter
is woken in its place. It also passes on a wake-up that reached a waiter
no longer waiting (its entry already popped: the ZREM finds nothing).
*/}}
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
{{template "wake" "KEYS[3]"}}
end
return 1
