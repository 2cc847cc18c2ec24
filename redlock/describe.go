package redlock

import (
	"fmt"
	"strings"
)

// String describes the Locker: its nodes, database, ACL user, whether
// its connections use TLS, and its Prefix. It never contains a password.
func (l *Locker) String() string {
	var b strings.Builder
	b.WriteString("redlock.Locker{")
	for i, n := range l.nodes {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(n.addr)
		if n.tls != nil {
			b.WriteString(" tls")
		}
	}
	fmt.Fprintf(&b, " db %d", l.opts.DB)
	if l.opts.Username != "" {
		fmt.Fprintf(&b, " user %q", l.opts.Username)
	}
	if l.opts.Password != "" {
		b.WriteString(" password set")
	}
	if l.opts.Prefix != "" {
		fmt.Fprintf(&b, " prefix %q", l.opts.Prefix)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v prints no settings either.
func (l *Locker) GoString() string { return l.String() }

// redacted is what String and GoString print for a set Password.
const redacted = "REDACTED"

// shown is Options without its methods, for fmt.
type shown Options

// safe is o with a set Password replaced by redacted.
func (o Options) safe() shown {
	if o.Password != "" {
		o.Password = redacted
	}
	return shown(o)
}

// String prints the options as %+v would, with a set Password shown as
// REDACTED.
func (o Options) String() string { return fmt.Sprintf("%+v", o.safe()) }

// GoString prints the options as %#v would, with a set Password shown as
// "REDACTED".
func (o Options) GoString() string {
	return "redlock.Options" + strings.TrimPrefix(fmt.Sprintf("%#v", o.safe()), "redlock.shown")
}
