// Package all registers every distlock backend with distlock.Open:
//
//	import _ "github.com/distlock/distlock/all"
//
// Schemes: mem (memlock); redis, rediss, redis+sentinel, rediss+sentinel,
// redis+cluster and rediss+cluster (redissingle); redlock (redlock); etcd (etcdlock),
// postgres and postgresql (pgadvisory), zk (zklock), and migrate (migrate),
// which composes two of them during a migration.
//
// A backend registers its schemes from its own package's init
// (distlock.Register); this list of imports is the one place that names
// every backend.
package all

import (
	_ "github.com/distlock/distlock/etcdlock"
	_ "github.com/distlock/distlock/memlock"
	_ "github.com/distlock/distlock/migrate"
	_ "github.com/distlock/distlock/pgadvisory"
	_ "github.com/distlock/distlock/redissingle"
	_ "github.com/distlock/distlock/redlock"
	_ "github.com/distlock/distlock/zklock"
)
