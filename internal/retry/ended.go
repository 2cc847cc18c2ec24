package retry

import (
	"context"
	"errors"

	"github.com/distlock/distlock"
)

// Ended is the error of an acquisition whose context ended while it
// waited: it matches distlock.ErrNotAcquired and ctx's error (Canceled or
// DeadlineExceeded), joined with last, the last attempt's error (nil for
// none). It returns nil while ctx has not ended.
func Ended(ctx context.Context, last error) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if last != nil && errors.Is(last, err) && errors.Is(last, distlock.ErrNotAcquired) {
		return last
	}
	return errors.Join(distlock.ErrNotAcquired, err, last)
}
