package redissingle

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// conn is what a URL says about connecting, besides go-redis's own
// parameters: the credentials of the Redis servers (user "" is Redis's
// default user), those of the Sentinels, and TLS (nil: plaintext).
type conn struct {
	user, password                 string
	sentinelUser, sentinelPassword string
	tls                            *tls.Config
}

// credentials reads the userinfo as redis-cli does: user:password,
// :password (the default user), or a password alone.
func credentials(u *url.URL) (user, password string) {
	if u.User == nil {
		return "", ""
	}
	if p, ok := u.User.Password(); ok {
		return u.User.Username(), p
	}
	return "", u.User.Username()
}

// Default ports of the hosts of a URL.
const (
	redisPort    = "6379"
	sentinelPort = "26379"
)

// hosts splits a comma-separated host list into host:port addresses, port
// defaulting to defPort. An IPv6 address is written in brackets.
func hosts(list, defPort string) ([]string, error) {
	if list == "" {
		return nil, fmt.Errorf("no host")
	}
	var out []string
	for _, h := range strings.Split(list, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil { // no port
			host, port = h, defPort
			if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
				host = h[1 : len(h)-1]
			} else if strings.Contains(h, ":") {
				return nil, fmt.Errorf("host %q: write an IPv6 address in brackets", h)
			}
		}
		if host == "" {
			return nil, fmt.Errorf("empty host in %q", list)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("host %q: bad port", h)
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	return out, nil
}

// reservedParams are go-redis URL parameters the Locker refuses, because the URL
// says the same thing elsewhere (so it cannot be said twice, differently)
// or because they would route the Locker's commands to replicas, whose
// copy of the locks lags, or panic: the reason is the value.
var reservedParams = map[form]map[string]string{
	standalone: {
		"username":    "give the credentials in the userinfo, user:password@",
		"password":    "give the credentials in the userinfo, user:password@",
		"skip_verify": "use tls_insecure_skip_verify",
	},
	sentinel: {
		"addr":                      "list the Sentinels in the host, s1:26379,s2:26379",
		"master_name":               "give the master name as the path, /mymaster",
		"db":                        "give the database after the master name, /mymaster/1",
		"username":                  "give the credentials in the userinfo, user:password@",
		"password":                  "give the credentials in the userinfo, user:password@",
		"skip_verify":               "use tls_insecure_skip_verify",
		"replica_only":              "the Locker must write to the master",
		"use_disconnected_replicas": "the Locker must write to the master",
		"route_by_latency":          "the Locker must write to the master",
		"route_randomly":            "the Locker must write to the master",
	},
	cluster: {
		"addr":             "list the nodes in the host, h1:6379,h2:6379",
		"skip_verify":      "use tls_insecure_skip_verify",
		"read_only":        "the Locker must read from the primaries",
		"route_by_latency": "the Locker must read from the primaries",
		"route_randomly":   "the Locker must read from the primaries",
	},
}

// checkRest refuses rest's reserved parameters of f.
func checkRest(f form, rest *url.URL) error {
	q, err := url.ParseQuery(rest.RawQuery)
	if err != nil {
		return fmt.Errorf("malformed query")
	}
	for name := range q {
		if why, ok := reservedParams[f][name]; ok {
			return fmt.Errorf("parameter %s is not accepted: %s", name, why)
		}
	}
	return nil
}

// standaloneOptions are the go-redis options of a redis:// or rediss://
// URL: host[:port] (default localhost:6379) and /db (default 0, or the db
// parameter, not both).
func standaloneOptions(u, rest *url.URL, c conn) (*redis.Options, error) {
	if err := checkRest(standalone, rest); err != nil {
		return nil, err
	}
	if strings.Contains(u.Host, ",") {
		return nil, fmt.Errorf("several hosts: use redis+sentinel:// or redis+cluster:// (or redlock:// for independent servers)")
	}
	if strings.Trim(u.Path, "/") != "" && rest.Query().Has("db") {
		return nil, fmt.Errorf("database given twice, as the path and as parameter db: give one")
	}
	o, err := redis.ParseURL(goRedisURL(rest, u.Host, u.Path))
	if err != nil {
		return nil, goRedisErr(err)
	}
	o.Username, o.Password, o.TLSConfig = c.user, c.password, c.tls
	return o, nil
}

// clusterOptions are the go-redis options of a redis+cluster:// or
// rediss+cluster:// URL: a comma-separated list of seed nodes (port
// default 6379) and no database but 0.
func clusterOptions(u, rest *url.URL, c conn) (*redis.ClusterOptions, error) {
	if err := checkRest(cluster, rest); err != nil {
		return nil, err
	}
	addrs, err := hosts(u.Host, redisPort)
	if err != nil {
		return nil, err
	}
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return nil, fmt.Errorf("path %q: Redis Cluster has only database 0; give no path", u.Path)
	}
	o, err := redis.ParseClusterURL(goRedisURL(rest, addrs[0], ""))
	if err != nil {
		return nil, goRedisErr(err)
	}
	o.Addrs = addrs
	o.Username, o.Password, o.TLSConfig = c.user, c.password, c.tls
	return o, nil
}

// failoverOptions are the go-redis options of a redis+sentinel:// or
// rediss+sentinel:// URL: a comma-separated list of Sentinels (port
// default 26379), the master name as the path and an optional database
// after it: /mymaster or /mymaster/1.
func failoverOptions(u, rest *url.URL, c conn) (*redis.FailoverOptions, error) {
	if err := checkRest(sentinel, rest); err != nil {
		return nil, err
	}
	addrs, err := hosts(u.Host, sentinelPort)
	if err != nil {
		return nil, err
	}
	master, db, err := masterPath(u.Path)
	if err != nil {
		return nil, err
	}
	o, err := redis.ParseFailoverURL(goRedisURL(rest, addrs[0], ""))
	if err != nil {
		return nil, goRedisErr(err)
	}
	o.SentinelAddrs, o.MasterName, o.DB = addrs, master, db
	o.Username, o.Password, o.TLSConfig = c.user, c.password, c.tls
	o.SentinelUsername, o.SentinelPassword = c.sentinelUser, c.sentinelPassword
	return o, nil
}

// masterPath reads /master[/db].
func masterPath(path string) (master string, db int, err error) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if parts[0] == "" || len(parts) > 2 {
		return "", 0, fmt.Errorf("path %q: want the master name and an optional database, /mymaster or /mymaster/1", path)
	}
	if len(parts) == 2 {
		if db, err = strconv.Atoi(parts[1]); err != nil || db < 0 {
			return "", 0, fmt.Errorf("path %q: database %q is not a number >= 0", path, parts[1])
		}
	}
	return parts[0], db, nil
}
