package redissingle

import (
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// String describes the Locker: its client's kind and addresses, database,
// ACL user and TLS, and its Prefix. It never contains a password: the
// client's credentials are not printed, and neither are its other
// settings.
func (l *Locker) String() string {
	var b strings.Builder
	b.WriteString("redissingle.Locker{")
	switch c := l.client.(type) {
	case *redis.ClusterClient:
		fmt.Fprintf(&b, "cluster %s", strings.Join(c.Options().Addrs, ","))
	case *redis.Client:
		o := c.Options()
		// A Sentinel failover client's Addr is "FailoverClient".
		fmt.Fprintf(&b, "%s db %d", o.Addr, o.DB)
	default:
		fmt.Fprintf(&b, "%T", c)
	}
	if l.conn.user != "" {
		fmt.Fprintf(&b, " user %q", l.conn.user)
	}
	if l.conn.tls {
		b.WriteString(" tls")
	}
	if l.opts.Prefix != "" {
		fmt.Fprintf(&b, " prefix %q", l.opts.Prefix)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v prints no client settings either.
func (l *Locker) GoString() string { return l.String() }
