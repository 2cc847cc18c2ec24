package memlock

import "github.com/distlock/distlock"

// defaults returns the per-call defaults of a Locker made by New: opts with
// every zero field set from distlock.DefaultOptions (all of them for nil).
// AutoExtend stays as given. Of the options, memlock uses TTL, AutoExtend
// and MaxHold; the retry delay bounds are validated but unused, since
// waiters are woken by the key's release and never poll.
func defaults(opts *distlock.Options) distlock.Options {
	var d distlock.Options
	if opts != nil {
		d = *opts
	}
	return d.WithDefaults()
}
