// Package urlopt parses a Locker URL's query parameters and rejects the
// ones nobody asked for, as gocloud.dev's URL openers do.
package urlopt

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// Params reads query parameters once each and remembers the first error.
// The getters (String, Duration, Int, Float, Bool) return the parameter's
// last value, or def when it is absent; a parameter given twice, or a
// value that does not parse (def is returned then), becomes the first
// error, matching distlock.ErrInvalidArgument, that Done returns.
type Params struct {
	values url.Values
	used   map[string]bool
	err    error
}

// New returns the query parameters of u. A query that does not parse (a
// bad %-escape, a ';' separator) is remembered as the first error, so a
// malformed parameter is refused instead of silently dropped.
func New(u *url.URL) *Params {
	values, err := url.ParseQuery(u.RawQuery)
	p := &Params{values: values, used: map[string]bool{}}
	if err != nil {
		// The raw query is not quoted: it may carry credentials.
		p.err = fmt.Errorf("%w: malformed query: %v", distlock.ErrInvalidArgument, err)
	}
	return p
}

// raw marks name read and returns its last value; a repeated parameter
// is an error.
func (p *Params) raw(name string) (string, bool) {
	p.used[name] = true
	vs, ok := p.values[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	if len(vs) > 1 && p.err == nil {
		p.err = fmt.Errorf("%w: parameter %q given %d times", distlock.ErrInvalidArgument, name, len(vs))
	}
	return vs[len(vs)-1], true
}

// fail remembers a bad value of name unless an error came first.
func (p *Params) fail(name, v string, err error) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: parameter %s=%q: %v", distlock.ErrInvalidArgument, name, v, err)
	}
}

// String returns the parameter or def.
func (p *Params) String(name, def string) string {
	if v, ok := p.raw(name); ok {
		return v
	}
	return def
}

// Duration returns the parameter parsed by time.ParseDuration, or def.
func (p *Params) Duration(name string, def time.Duration) time.Duration {
	v, ok := p.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		p.fail(name, v, err)
		return def
	}
	return d
}

// Int returns the parameter as an int, or def.
func (p *Params) Int(name string, def int) int {
	v, ok := p.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.fail(name, v, err)
		return def
	}
	return n
}

// Float returns the parameter as a float64, or def.
func (p *Params) Float(name string, def float64) float64 {
	v, ok := p.raw(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		p.fail(name, v, err)
		return def
	}
	return f
}

// Bool returns the parameter as a bool, or def.
func (p *Params) Bool(name string, def bool) bool {
	v, ok := p.raw(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, v, err)
		return def
	}
	return b
}

// LockOptions reads the parameters every backend accepts into the Locker's
// default per-call options: ttl, autoextend (a max hold duration, or true
// for distlock.DefaultMaxHold), retry_min and retry_max.
func (p *Params) LockOptions() distlock.Options {
	o := distlock.DefaultOptions()
	o.TTL = p.Duration("ttl", o.TTL)
	if v, ok := p.raw("autoextend"); ok {
		switch b, err := strconv.ParseBool(v); {
		case err == nil:
			o.AutoExtend = b
		default:
			d, err := time.ParseDuration(v)
			if err != nil {
				p.fail("autoextend", v, fmt.Errorf("want true, false or a max hold duration"))
			}
			o.AutoExtend, o.MaxHold = true, d
		}
	}
	o.RetryMin = p.Duration("retry_min", o.RetryMin)
	o.RetryMax = p.Duration("retry_max", o.RetryMax)
	if p.err == nil {
		if err := o.Validate(); err != nil {
			p.err = err
		}
	}
	return o
}

// Done returns the first parse error, or an error naming every parameter
// that was never read. Both match distlock.ErrInvalidArgument.
func (p *Params) Done() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for name := range p.values {
		if !p.used[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%w: unknown URL parameter(s) %s", distlock.ErrInvalidArgument, strings.Join(unknown, ", "))
	}
	return nil
}

// Split divides u's query between the Locker and its client library:
// ours holds the parameters named in names (the ones the backend reads
// with a Params), rest every other one, for the client's own URL parser,
// which rejects those it does not know. Both are copies of u; a query
// that does not parse leaves ours with u's raw query, so New reports it.
func Split(u *url.URL, names []string) (ours, rest *url.URL) {
	o, r := *u, *u
	other, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		r.RawQuery = ""
		return &o, &r
	}
	q := url.Values{}
	for _, name := range names {
		if vs, ok := other[name]; ok {
			q[name] = vs
			delete(other, name)
		}
	}
	o.RawQuery, r.RawQuery = q.Encode(), other.Encode()
	return &o, &r
}
