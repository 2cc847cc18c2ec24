package testbed

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
)

// A server certificate from NewCA verifies against the CA's pool for every
// ServerHosts name and against nothing else; a client certificate carries
// its name.
func TestCAIssuesVerifiableCertificates(t *testing.T) {
	ca := NewCA(t)
	srv := ca.Server(t, "redis-0")
	leaf, err := x509.ParseCertificate(srv.TLSCertificate(t).Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range append(append([]string(nil), ServerHosts...), "redis-0") {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: host}); err != nil {
			t.Errorf("verify for %q: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "elsewhere"}); err == nil {
		t.Error("server certificate verified for a host it does not name")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: NewCA(t).Pool(), DNSName: "localhost"}); err == nil {
		t.Error("server certificate verified against another CA")
	}
	cl, err := x509.ParseCertificate(ca.Client(t, "locker").TLSCertificate(t).Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if cl.Subject.CommonName != "locker" {
		t.Errorf("client CN = %q", cl.Subject.CommonName)
	}
}

// A TLS handshake between a server and a client of one CA succeeds, with
// the client certificate required.
func TestCAHandshake(t *testing.T) {
	ca := NewCA(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{ca.Server(t).TLSCertificate(t)},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			err = c.(*tls.Conn).Handshake()
			c.Close()
		}
		done <- err
	}()
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
		RootCAs:      ca.Pool(),
		ServerName:   host,
		Certificates: []tls.Certificate{ca.Client(t, "c").TLSCertificate(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
}
