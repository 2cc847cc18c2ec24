package testbed

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PostgresTLS turns a Postgres server's ssl on, with a server certificate
// CA signs for ServerHosts.
type PostgresTLS struct {
	// CA signs the server certificate. Required.
	CA *CA
	// Required makes the password users (PostgresOptions.Users) connect
	// over TLS only: their pg_hba.conf lines are hostssl, and a plaintext
	// connection as one of them is rejected. The superuser keeps trust
	// authentication without TLS, so the testbed's own connections stay
	// as they are.
	Required bool
}

// PostgresPasswordUser is a login role the testbed creates once the
// server runs, authenticated by scram-sha-256 over TCP, with CREATE on
// the public schema (so that it can create pgadvisory's fence sequence).
type PostgresPasswordUser struct {
	Name, Password string
}

// postgresTLSDir holds the server's certificate. Postgres refuses a key
// the postgres user does not own or that others may read, and files are
// copied in owned by root, while the image's entry point runs its command
// as postgres: the key is copied in readable (postgresKeySource) and the
// command installs it as postgresKeyFile, owned by postgres, mode 600,
// before it starts the server.
const (
	postgresTLSDir    = "/etc/distlock-pg-tls"
	postgresKeySource = "/etc/distlock-pg-tls/server.key.src"
	postgresKeyFile   = "/tmp/distlock-pg-server.key"
)

// hbaLines are the pg_hba.conf lines of the password users, placed
// before the lines that trust everyone else.
func (o PostgresOptions) hbaLines() string {
	var b strings.Builder
	for _, u := range o.Users {
		name := pgHBAQuote(u.Name)
		switch {
		case o.TLS != nil && o.TLS.Required:
			fmt.Fprintf(&b, "hostssl all %s all scram-sha-256\nhost all %s all reject\n", name, name)
		default:
			fmt.Fprintf(&b, "host all %s all scram-sha-256\n", name)
		}
	}
	return b.String()
}

// pgHBAQuote quotes a user name for pg_hba.conf.
func pgHBAQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// withTLS returns spec with ssl on: the certificate files and a command
// that installs the key for the postgres user before the image's entry
// point starts the server. Without TLS it returns spec unchanged.
func (o PostgresOptions) withTLS(t testing.TB, spec nodeSpec) nodeSpec {
	t.Helper()
	if o.TLS == nil {
		return spec
	}
	if o.TLS.CA == nil {
		t.Fatalf("testbed: StartPostgres: PostgresTLS without a CA")
	}
	kp := o.TLS.CA.Server(t)
	spec.files = append(spec.files,
		fileSpec{path: postgresTLSDir + "/server.crt", content: kp.CertPEM, mode: 0o644},
		fileSpec{path: postgresKeySource, content: kp.KeyPEM, mode: 0o644})
	args := append(append([]string(nil), spec.cmd...),
		"-c", "ssl=on",
		"-c", "ssl_cert_file="+postgresTLSDir+"/server.crt",
		"-c", "ssl_key_file="+postgresKeyFile)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shQuote(a)
	}
	script := fmt.Sprintf("install -m 600 %s %s && exec %s", postgresKeySource, postgresKeyFile, strings.Join(quoted, " "))
	// The entry point runs `su postgres -c "exec $*"`: the arguments are
	// joined and parsed by a shell again, hence the second quoting.
	spec.cmd = []string{"sh", "-c", shQuote(script)}
	return spec
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// createUsers creates the password users through an admin connection.
func (p *PostgresNode) createUsers(ctx context.Context, t testing.TB, users []PostgresPasswordUser) {
	t.Helper()
	for _, u := range users {
		role := pgx.Identifier{u.Name}.Sanitize()
		pw := "'" + strings.ReplaceAll(u.Password, "'", "''") + "'"
		for _, sql := range []string{
			"SET password_encryption = 'scram-sha-256'; CREATE ROLE " + role + " LOGIN PASSWORD " + pw,
			"GRANT CREATE ON SCHEMA public TO " + role,
		} {
			if err := p.Exec(ctx, sql); err != nil {
				t.Fatalf("testbed: %s: create user %q failed", p.name, u.Name) // the error would quote the password
			}
		}
	}
}
