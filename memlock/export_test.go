package memlock

// ErrKeyExpired is the cause a lease lost to its key's expiry timer
// carries.
var ErrKeyExpired = errExpired
