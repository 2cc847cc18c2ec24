package redlock

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"
	"text/template"
)

// The Lua scripts, loaded (SCRIPT LOAD) on every new connection and run
// with EVALSHA. Each runs atomically on one node, on the keys of one lock
// (see keys.go), which it takes as KEYS, and its arguments as ARGV. Each
// is one file of lua/, whose header comment gives its KEYS, ARGV and
// reply; the parts several scripts share are templates of lua/parts.lua.
// The scripts name no key, so they are rendered once, when the package
// is initialised: every Locker runs the same scripts.

//go:embed lua/*.lua
var luaFiles embed.FS

var luaTemplates = template.Must(template.New("").ParseFS(luaFiles, "lua/*.lua"))

type script struct{ src, sha string }

// newScript renders lua/<name>.lua.
func newScript(name string) *script {
	var b strings.Builder
	if err := luaTemplates.ExecuteTemplate(&b, name+".lua", nil); err != nil {
		panic("redlock: script " + name + ": " + err.Error())
	}
	src := b.String()
	h := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(h[:])}
}

var (
	acquireScript = newScript("acquire")
	releaseScript = newScript("release")
	releaseFenced = newScript("release_fenced")
	extendScript  = newScript("extend")
	fenceScript   = newScript("fence")
	leaveScript   = newScript("leave")
	allScripts    = []*script{acquireScript, releaseScript, releaseFenced, extendScript, fenceScript, leaveScript}
)
