{{/*
KEYS lock, queue. ARGV token. The release of a lease whose fence every
granting node already had, and the unlock of a failed acquisition: only
two keys and one argument, since a script's cost grows with them (three
keys and two arguments cost Redis more per call than one and one,
measured by benchmark B1 on five nodes, see docs/benchmarks.md).
*/ -}}
{{template "release" "KEYS[2]"}}
