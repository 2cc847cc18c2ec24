package testbed

import (
	"crypto/sha1"
	"encoding/base64"
	"strings"
)

// ZooKeeperSuperUser is the digest user a server started with
// ZooKeeperOptions.SuperPassword treats as its administrator: ACLs do not
// apply to a session authenticated as it.
const ZooKeeperSuperUser = "super"

// ZooKeeperDigest is the identity ZooKeeper's digest scheme gives user
// and password: "user:" followed by the base64 SHA-1 of "user:password".
func ZooKeeperDigest(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// authConfig is the authentication part of zoo.cfg: the super user's
// digest (DigestAuthenticationProvider.superDigest) and, with
// RequireAuth, enforce.auth.enabled for the digest scheme, so that a
// session's requests are refused (and its connection closed) until it
// authenticates. zoo.cfg keys ZooKeeper does not know become system
// properties prefixed "zookeeper.", which is where the server reads
// these.
func (o ZooKeeperOptions) authConfig() string {
	var b strings.Builder
	if o.SuperPassword != "" {
		b.WriteString("DigestAuthenticationProvider.superDigest=" + ZooKeeperDigest(ZooKeeperSuperUser, o.SuperPassword) + "\n")
	}
	if o.RequireAuth {
		b.WriteString("enforce.auth.enabled=true\nenforce.auth.schemes=digest\n")
	}
	return b.String()
}
