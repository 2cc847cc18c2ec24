{{/*
KEYS lock (unused), fence counter. ARGV fence. The write-back of a new
lease's fence to the nodes whose counter was below it.
*/ -}}
{{template "setmax"}}
setmax(tonumber(ARGV[1]))
return 1
