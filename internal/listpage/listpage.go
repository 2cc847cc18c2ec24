// Package listpage holds the paging logic shared by the List methods of
// the distlock.Inspector implementations: while scanning a backend's
// names in any order, keep the Limit+1 smallest names after the page's
// cursor in bytewise order (a Collector), then cut them to a page of
// Limit names and the cursor of the next page (Cut); and the SCAN MATCH
// pattern of a name prefix for the Redis backends (MatchPrefix).
package listpage

import (
	"slices"
	"strings"
)

// Collector keeps the Keep smallest distinct names offered to it that
// are greater than its cursor, in bytewise order. Its memory is bounded
// by Keep whatever the number of names offered. The zero value keeps
// nothing; it is not safe for concurrent use.
type Collector struct {
	cursor string
	keep   int
	names  []string // sorted, distinct, at most keep
}

// NewCollector returns a Collector of the keep smallest names greater
// than cursor (an empty cursor: every non-empty name). A keep of 0 or
// less keeps nothing.
func NewCollector(cursor string, keep int) *Collector {
	return &Collector{cursor: cursor, keep: max(keep, 0), names: make([]string, 0, min(max(keep, 0), 64))}
}

// Offer adds name if it is greater than the cursor and among the keep
// smallest offered so far, dropping the largest kept when full. A name
// offered again is kept once. It reports whether name is kept.
func (c *Collector) Offer(name string) bool {
	if name <= c.cursor || c.keep == 0 {
		return false
	}
	i, found := slices.BinarySearch(c.names, name)
	if found {
		return true
	}
	if i == c.keep {
		return false // full, and name is greater than every kept name
	}
	if len(c.names) == c.keep {
		c.names = c.names[:len(c.names)-1]
	}
	c.names = slices.Insert(c.names, i, name)
	return true
}

// Names returns the kept names in bytewise order. The slice is the
// Collector's own until the next Offer.
func (c *Collector) Names() []string {
	return c.names
}

// Cut cuts names, sorted and holding up to limit+1 names, to a page of
// its first limit names. When names holds more than limit, next is the
// page's last name (the cursor of the next page); otherwise it is "" and
// page is names. A limit of 0 or less returns an empty page and "".
func Cut(names []string, limit int) (page []string, next string) {
	if limit <= 0 {
		return names[:0], ""
	}
	if len(names) > limit {
		return names[:limit], names[limit-1]
	}
	return names, ""
}

// MatchPrefix returns the Redis glob-style pattern (SCAN ... MATCH) of the
// names that start with prefix: prefix with the characters special to the
// glob (* ? [ ] \) escaped, then "*".
func MatchPrefix(prefix string) string {
	var b strings.Builder
	for i := 0; i < len(prefix); i++ {
		switch c := prefix[i]; c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(prefix[i])
	}
	b.WriteByte('*')
	return b.String()
}
