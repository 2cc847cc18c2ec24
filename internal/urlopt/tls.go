package urlopt

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/distlock/distlock"
)

// TLSParams are the names of the TLS parameters every network backend's
// URL accepts, as TLS reads them:
//
//	tls=true|false            TLS on or off (default: on for a TLS scheme
//	                          such as rediss, or when another tls_ parameter
//	                          is given; off otherwise)
//	tls_ca=FILE               PEM file of the CAs to trust (default: the
//	                          system's roots)
//	tls_cert=FILE             PEM client certificate (needs tls_key)
//	tls_key=FILE              PEM key of tls_cert
//	tls_server_name=NAME      name to verify the server's certificate
//	                          against (default: the host dialled)
//	tls_insecure_skip_verify=true
//	                          accept any server certificate (tests only)
var TLSParams = []string{"tls", "tls_ca", "tls_cert", "tls_key", "tls_server_name", "tls_insecure_skip_verify"}

// TLS reads the TLSParams and returns the client configuration they
// describe, or nil when TLS is off. scheme says whether the URL's scheme
// asks for TLS. It reads the files named, so that a missing or malformed
// file is an error of the URL rather than of the first connection; errors
// match distlock.ErrInvalidArgument, name the parameter and the file, and
// never quote a file's content. The configuration requires TLS 1.2 or
// newer. Other errors come from Done.
func (p *Params) TLS(scheme bool) *tls.Config {
	ca := p.String("tls_ca", "")
	cert := p.String("tls_cert", "")
	key := p.String("tls_key", "")
	name := p.String("tls_server_name", "")
	skip := p.Bool("tls_insecure_skip_verify", false)
	implied := scheme || ca != "" || cert != "" || key != "" || name != "" || skip
	on := p.Bool("tls", implied)
	if p.err != nil {
		return nil
	}
	if !on {
		if implied {
			p.err = fmt.Errorf("%w: tls=false with a TLS scheme or tls_ parameters; drop one", distlock.ErrInvalidArgument)
		}
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: name, InsecureSkipVerify: skip}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			p.err = fmt.Errorf("%w: tls_ca: %v", distlock.ErrInvalidArgument, err)
			return nil
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			p.err = fmt.Errorf("%w: tls_ca: no PEM certificate in %s", distlock.ErrInvalidArgument, ca)
			return nil
		}
	}
	if (cert == "") != (key == "") {
		p.err = fmt.Errorf("%w: tls_cert and tls_key go together; give both or neither", distlock.ErrInvalidArgument)
		return nil
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			p.err = fmt.Errorf("%w: tls_cert %s with tls_key %s: %v", distlock.ErrInvalidArgument, cert, key, err)
			return nil
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}
