package testbed

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// ZooKeeperTLS makes a server serve clients over TLS on its client port
// (secureClientPort, with Netty, the connection factory that can: the
// Debian image has Netty 4.1 in /usr/share/java). Peers still talk in
// plaintext. Clients are not asked for certificates.
type ZooKeeperTLS struct {
	// Server is the server's certificate and key (CA.Server).
	Server KeyPair
	// CA is the PEM of the CA that issued Server: the testbed's own TLS
	// connections (the probe, Mode of a TLS-only server) trust it.
	CA string
	// Plaintext makes the port accept plaintext clients too
	// (client.portUnification). Without it the port is TLS-only, which
	// StartZooKeeper supports and StartZooKeeperEnsemble does not (the
	// node's Mode and FourLetter speak plaintext).
	Plaintext bool
}

// Paths of the TLS files in the container.
const (
	zkTLSDir     = "/etc/distlock-tls"
	zkTLSKeyPair = zkTLSDir + "/server.pem" // certificate and PKCS#8 key
	zkTLSCA      = zkTLSDir + "/ca.pem"
)

// zkNetty is the classpath of Netty's jars in the Debian image.
var zkNetty = []string{"netty-handler", "netty-common", "netty-buffer", "netty-transport", "netty-codec",
	"netty-resolver", "netty-transport-native-epoll", "netty-transport-native-unix-common"}

// tlsConfig is the TLS part of zoo.cfg: no clientPort, the TLS port on
// the container's client port, PEM key and trust stores.
func (o ZooKeeperOptions) tlsConfig() string {
	if o.TLS == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("secureClientPort=2181\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
	b.WriteString("ssl.keyStore.location=" + zkTLSKeyPair + "\nssl.keyStore.type=PEM\n")
	b.WriteString("ssl.trustStore.location=" + zkTLSCA + "\nssl.trustStore.type=PEM\nssl.clientAuth=none\n")
	if o.TLS.Plaintext {
		b.WriteString("client.portUnification=true\n")
	}
	return b.String()
}

// tlsFiles are the certificate files copied into the container (readable
// by all; the key exists only for this test).
func (o ZooKeeperOptions) tlsFiles() []fileSpec {
	if o.TLS == nil {
		return nil
	}
	return []fileSpec{
		{path: zkTLSKeyPair, content: o.TLS.Server.CertPEM + o.TLS.Server.KeyPEM, mode: 0o644},
		{path: zkTLSCA, content: o.TLS.CA, mode: 0o644},
	}
}

// classpath is the JVM's classpath beyond ZooKeeper's own jars.
func (o ZooKeeperOptions) classpath() string {
	if o.TLS == nil {
		return ""
	}
	var b strings.Builder
	for _, j := range zkNetty {
		b.WriteString(":/usr/share/java/" + j + ".jar")
	}
	return b.String()
}

// tlsOnly reports whether the client port refuses plaintext.
func (o ZooKeeperOptions) tlsOnly() bool { return o.TLS != nil && !o.TLS.Plaintext }

// clientTLS is the configuration of the testbed's own TLS connections.
func (o ZooKeeperOptions) clientTLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(o.TLS.CA))
	return &tls.Config{RootCAs: pool, ServerName: ServerHosts[0], MinVersion: tls.VersionTLS12}
}

// tlsFourLetter is fourLetter over TLS.
func tlsFourLetter(ctx context.Context, cfg *tls.Config, addr, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, zkCommandTimeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// tlsProbe is the container probe of a TLS-only server: ruok over TLS.
func (o ZooKeeperOptions) tlsProbe(ctx context.Context, addr string) error {
	reply, err := tlsFourLetter(ctx, o.clientTLS(), addr, "ruok")
	if err == nil && reply != "imok" {
		err = fmt.Errorf("ruok: %q", reply)
	}
	return err
}

// waitServingTLS waits until a TLS-only standalone server serves (srvr
// over TLS reports a mode), or ctx ends.
func (o ZooKeeperOptions) waitServingTLS(ctx context.Context, n *ZooKeeperNode) error {
	for {
		reply, err := tlsFourLetter(ctx, o.clientTLS(), n.HostAddr(), "srvr")
		if err == nil && strings.Contains(reply, "Mode: ") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not serve over TLS: %w (last: %v %q)", n.name, ctx.Err(), err, reply)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
