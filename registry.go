package distlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Opener opens a Locker from a parsed URL. Backends register one per scheme
// with Register. An Opener must reject query parameters it does not know
// with an error matching ErrInvalidArgument (see package internal/urlopt).
type Opener func(ctx context.Context, u *url.URL) (Locker, error)

var registry = struct {
	sync.RWMutex
	openers map[string]Opener
}{openers: map[string]Opener{}}

// Register makes a backend available to Open under scheme (matched without
// regard to case). It is meant to be called from a backend package's init,
// so that importing the package registers its schemes; the root package
// keeps no list of backends. It panics if scheme is empty, opener is nil,
// or the scheme is already registered, as database/sql does.
func Register(scheme string, opener Opener) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || opener == nil {
		panic("distlock: Register needs a scheme and an opener")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.openers[scheme]; dup {
		panic("distlock: Register called twice for scheme " + scheme)
	}
	registry.openers[scheme] = opener
}

// Schemes lists the registered schemes, sorted; it is empty until a
// backend package is imported.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.openers))
	for s := range registry.openers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Open opens a Locker from a URL such as "mem://", "redis://host:6379/0?ttl=10s"
// or "redlock://h1:6379,h2:6379,h3:6379". The root package registers no
// scheme: import the backend packages whose schemes you use, or
// github.com/distlock/distlock/all for every one.
//
// A malformed URL, a URL without a scheme, an unregistered scheme or an
// unknown query parameter returns an error matching ErrInvalidArgument;
// for an unregistered scheme it names the registered ones. Other errors
// are the backend Opener's.
func Open(ctx context.Context, rawURL string) (Locker, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may hold a password
		}
		return nil, fmt.Errorf("%w: malformed URL: %v", ErrInvalidArgument, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "" {
		return nil, fmt.Errorf("%w: URL %q has no scheme", ErrInvalidArgument, u.Redacted())
	}
	registry.RLock()
	opener := registry.openers[scheme]
	registry.RUnlock()
	if opener == nil {
		return nil, fmt.Errorf("%w: unknown scheme %q: import the backend package that registers it, or %q for every backend (registered: %s)",
			ErrInvalidArgument, scheme, "github.com/distlock/distlock/all", strings.Join(Schemes(), ", "))
	}
	return opener(ctx, u)
}
