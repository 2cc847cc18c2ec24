// Package redisauth recognizes the error replies with which a Redis
// server refuses a client's credentials, so that every Redis backend
// classes the same replies as a refused login (distlock.ErrAccessDenied)
// and leaves the others (a full server's "max number of clients
// reached", a loading or busy server) retryable. It does no I/O.
package redisauth

import "strings"

// prefixes are the replies of a server refusing the client's
// credentials: WRONGPASS (wrong password, unknown or disabled user),
// NOAUTH (the server wants credentials and got none), "ERR invalid
// password" and "ERR invalid username-password pair" (servers before
// Redis 6.2), and the replies to an AUTH a server without a password
// gets ("ERR AUTH <password> called without any password configured..."
// from Redis 6, "ERR Client sent AUTH, but no password is set" before).
var prefixes = []string{
	"WRONGPASS",
	"NOAUTH",
	"ERR AUTH",
	"ERR Client sent AUTH",
	"ERR invalid password",
	"ERR invalid username-password pair",
}

// Refused reports whether reply, the text of a Redis error reply
// (without the leading '-'), says the server refused the client's
// credentials.
func Refused(reply string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}
