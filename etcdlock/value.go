package etcdlock

import "strings"

// The value of an entry this Locker writes is the lease's token
// (lease.NewToken: 32 lowercase hex digits), followed, when the
// acquisition gave a label (distlock.WithLabel), by a space and the
// label. Only this Locker reads it back: an acquisition to recognise its
// own entry on a retry (adoptable), and Inspect. concurrency.Mutex and
// `etcdctl lock` write an empty value and read none. Since a client
// compares only its own entries' values, clients that write the token
// alone share a cluster with this one. The label is readable by anyone
// who can read the lock's prefix, as distlock.WithLabel warns.

// tokenLen is the length of a token (lease.NewToken).
const tokenLen = 32

// entryValue is the value of an entry written with token and label.
func entryValue(token, label string) string {
	if label == "" {
		return token
	}
	return token + " " + label
}

// valueKind is what parseValue found in an entry's value.
type valueKind int

const (
	// tokenValue: a token, and perhaps a label (entryValue).
	tokenValue valueKind = iota
	// emptyValue: an empty value, as concurrency.Mutex and etcdctl write.
	emptyValue
	// foreignValue: anything else.
	foreignValue
)

// parseValue splits an entry's value into its token and label.
func parseValue(v []byte) (token, label string, kind valueKind) {
	if len(v) == 0 {
		return "", "", emptyValue
	}
	s := string(v)
	token, label, _ = strings.Cut(s, " ")
	if len(token) != tokenLen || strings.IndexFunc(token, notLowerHex) >= 0 || (label == "" && len(s) > tokenLen) {
		return "", "", foreignValue
	}
	return token, label, tokenValue
}

func notLowerHex(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }
