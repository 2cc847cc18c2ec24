{{/*
KEYS lock, fence counter. ARGV token, ttl ms, fence. Compare-and-PEXPIRE
(never re-creates the key) and raise the counter. Returns 1 if the key
was ours, else 0.
*/ -}}
{{template "setmax"}}
setmax(tonumber(ARGV[3]))
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
