{{/*
KEYS lock, fence counter, queue. ARGV token, fence. Raise the counter to
the fence, then as release.lua.
*/ -}}
{{template "setmax"}}
setmax(tonumber(ARGV[2]))
{{template "release" "KEYS[3]"}}
