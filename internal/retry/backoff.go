package retry

import "time"

// Backoff paces a background loop that reconnects or retries after a
// failure (a subscription that dropped, a clean-up the server refused):
// each Wait sleeps the current delay, which starts at Min and doubles up
// to Max; Reset starts it over at Min, once a try has held long enough to
// count as a success. The zero value is not usable: set Min and Max
// (0 < Min <= Max). A Backoff belongs to one goroutine.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next is the delay the next Wait sleeps.
func (b *Backoff) Next() time.Duration { return max(b.cur, b.Min) }

// Reset makes the next Wait sleep Min.
func (b *Backoff) Reset() { b.cur = b.Min }

// Wait sleeps for Next, then doubles the delay (up to Max). It returns
// false, at once, if stop closes first.
func (b *Backoff) Wait(stop <-chan struct{}) bool {
	d := b.Next()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
	}
	b.cur = min(2*d, b.Max)
	return true
}
