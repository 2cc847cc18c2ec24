package memlock

import (
	"context"
	"fmt"
	"net/url"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/urlopt"
)

func init() { distlock.Register("mem", open) }

// open is the Opener of mem:// URLs: mem:// is the default process-wide
// space, mem://NAME the space called NAME. Unknown parameters, bad values
// and a path return an error matching distlock.ErrInvalidArgument.
func open(_ context.Context, u *url.URL) (distlock.Locker, error) {
	p := urlopt.New(u)
	opts := p.LockOptions()
	if err := p.Done(); err != nil {
		return nil, err
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("%w: mem URL takes a name as host (mem://NAME), not a path", distlock.ErrInvalidArgument)
	}
	return newLocker(sharedSpace(u.Host), opts), nil
}
