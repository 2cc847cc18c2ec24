package etcdlock

// Prefix exposes the etcd prefix of a key's lock to the tests.
func (l *Locker) Prefix(key string) string { return l.prefix(key) }
