package zklock

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/distlock/distlock"
)

// Node layout. For the caller's key k, with P = Options.Prefix:
//
//	P/escape(k)                                  the lock's parent: a container node
//	P/escape(k)/_c_<guid>-lock-<10-digit seq>    one per holder or waiter: ephemeral,
//	                                             sequential, protected by a GUID
//
// as Curator's InterProcessMutex lays out the lock at P/escape(k) (same
// "_c_" protection prefix and "lock-" sequence names), so Curator clients
// locking that path contend with this package. escape keeps ASCII letters,
// digits and "-_.~:@" and percent-encodes every other byte (including "/"
// and "%"), so any key is one path component and distinct keys never
// share a node; "." and ".." are encoded whole.
const (
	protectedPrefix = "_c_"
	lockMarker      = "-lock-"
	guidLen         = 32 // hex characters
)

// Length limits. ZooKeeper refuses a request larger than its jute.maxbuffer
// (1 MiB by default) by closing the connection, which suspends every lease
// of the session; escaped (at most three bytes a byte) and under the
// prefix, a key within these limits keeps each request far below that.
const (
	// MaxKeyLen is the longest key, in bytes, a Locker accepts
	// (distlock.MaxKeyLen, the limit of every backend); a longer one is
	// refused with distlock.ErrInvalidArgument before any request.
	MaxKeyLen = distlock.MaxKeyLen
	// MaxPrefixLen is the longest Options.Prefix, in bytes.
	MaxPrefixLen = 1024
)

// DefaultPrefix is the parent path of every lock unless Options.Prefix
// says otherwise.
const DefaultPrefix = "/distlock"

// escape maps a key to one valid, unique ZooKeeper path component.
func escape(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-_.~:@", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	s := b.String()
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return s
}

// checkKey refuses a key longer than MaxKeyLen. Every other key is valid:
// escape makes it one path component.
func checkKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: zklock: key of %d bytes; keys are at most %d bytes (MaxKeyLen)", distlock.ErrInvalidArgument, len(key), MaxKeyLen)
	}
	return nil
}

// checkPrefix validates a prefix: absolute, at most MaxPrefixLen bytes, no
// trailing slash, no empty, "." or ".." components, valid UTF-8 of the
// characters ZooKeeper accepts in a path (zkPathRune). "" means
// DefaultPrefix.
func checkPrefix(p string) (string, error) {
	if p == "" {
		return DefaultPrefix, nil
	}
	if len(p) > MaxPrefixLen {
		return "", fmt.Errorf("%w: zklock: prefix of %d bytes; a prefix is at most %d bytes (MaxPrefixLen)", distlock.ErrInvalidArgument, len(p), MaxPrefixLen)
	}
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/") || path.Clean(p) != p ||
		strings.ContainsAny(p, "\x00") {
		return "", fmt.Errorf("%w: zklock: prefix %q must be an absolute ZooKeeper path like /distlock", distlock.ErrInvalidArgument, p)
	}
	for _, c := range strings.Split(p[1:], "/") {
		if c == "." || c == ".." {
			return "", fmt.Errorf("%w: zklock: prefix %q has a %q component", distlock.ErrInvalidArgument, p, c)
		}
	}
	if !utf8.ValidString(p) {
		return "", fmt.Errorf("%w: zklock: prefix %q is not valid UTF-8, which ZooKeeper paths must be", distlock.ErrInvalidArgument, p)
	}
	for _, r := range p {
		if !zkPathRune(r) {
			return "", fmt.Errorf("%w: zklock: prefix %q has the character %U, which ZooKeeper refuses in a path", distlock.ErrInvalidArgument, p, r)
		}
	}
	return p, nil
}

// zkPathRune reports whether ZooKeeper's server accepts r in a path: its
// check (PathUtils.validatePath) refuses control characters, U+007F to
// U+009F, U+D800 to U+F8FF, U+FFF0 to U+FFFF and, as it checks UTF-16
// code units, every character above U+FFFF (a surrogate pair).
func zkPathRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
		return false
	}
	return true
}

// ancestors returns the paths from the first component of p down to p:
// "/a/b" gives ["/a", "/a/b"].
func ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return append(out, p)
}

// nodeName is the name our create asks for (the server appends the
// sequence number).
func nodeName(guid string) string { return protectedPrefix + guid + lockMarker }

// lockNode is a parsed child of a lock's parent.
type lockNode struct {
	name string
	seq  int64
}

// sequence returns the sequence number of a lock node name, or false for a
// child that is not a lock node.
func sequence(name string) (int64, bool) {
	i := strings.LastIndex(name, "lock-")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[i+len("lock-"):], 10, 64)
	return n, err == nil
}

// sortLockNodes returns the lock nodes among children in queue order (by
// sequence number, as Curator sorts them).
func sortLockNodes(children []string) []lockNode {
	out := make([]lockNode, 0, len(children))
	for _, c := range children {
		if seq, ok := sequence(c); ok {
			out = append(out, lockNode{c, seq})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// hasGUID reports whether a child's name carries guid (our protected create).
func hasGUID(name, guid string) bool {
	return strings.HasPrefix(name, protectedPrefix+guid)
}
