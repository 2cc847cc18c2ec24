package zklock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/testbed"
	"github.com/distlock/distlock/zklock"
)

// Passwords of the auth tests; no error or printed value may carry them.
const (
	alicePW = "alice-pw-7f3a"
	bobPW   = "bob-pw-91c2"
	superPW = "super-pw-55d0"
)

// authServer is a standalone server with a super user, and an admin
// session authenticated as it.
type authServer struct {
	*testbed.ZooKeeperNode
	admin *zk.Conn
}

func startAuthServer(t *testing.T, opts testbed.ZooKeeperOptions) *authServer {
	t.Helper()
	testbed.RequireDocker(t)
	opts.SuperPassword = superPW
	n := testbed.StartZooKeeper(t, opts)
	var cfg *tls.Config
	if opts.TLS != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(opts.TLS.CA))
		cfg = &tls.Config{RootCAs: pool, ServerName: "localhost"}
	}
	s := &authServer{ZooKeeperNode: n, admin: connectAs(t, n.Link("admin").Addr(), testbed.ZooKeeperSuperUser, superPW, cfg)}
	return s
}

// connectAs opens a go-zookeeper session authenticated as user, over TLS
// with cfg if it is not nil.
func connectAs(t testing.TB, addr, user, password string, cfg *tls.Config) *zk.Conn {
	t.Helper()
	var c *zk.Conn
	if cfg == nil {
		c = connect(t, []string{addr})
	} else {
		dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, cfg)
		}
		conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithDialer(dial), zk.WithLogger(noLog{}), zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			conn.Close()
			for range events {
			}
		})
		c = conn
	}
	if err := c.AddAuth("digest", []byte(user+":"+password)); err != nil {
		t.Fatalf("AddAuth %s: %v", user, err)
	}
	return c
}

func (s *authServer) locker(t testing.TB, client, user, password string) *zklock.Locker {
	t.Helper()
	l, err := zklock.New([]string{s.Link(client).Addr()}, withTick(&zklock.Options{Username: user, Password: password}))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// noSecret fails the test if err's text carries a password.
func noSecret(t testing.TB, what string, err error) {
	t.Helper()
	for _, pw := range []string{alicePW, bobPW, superPW, "wrong-pw-0000"} {
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("%s: the error carries a password: %v", what, err)
		}
	}
}

// wantNotAuthorized checks that err is an authorization failure that names
// user, and comes at once.
func wantNotAuthorized(t testing.TB, what, user string, err error, took time.Duration) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	noSecret(t, what, err)
	if !errors.Is(err, distlock.ErrUnavailable) || !errors.Is(err, distlock.ErrAccessDenied) {
		t.Fatalf("%s: %v, want ErrUnavailable and ErrAccessDenied", what, err)
	}
	if user != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", user)) {
		t.Errorf("%s: the error does not name user %q: %v", what, user, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: the error is not one line: %q", what, err)
	}
	if took > 5*time.Second {
		t.Errorf("%s: took %v", what, took)
	}
}

// TestAuthACL: a Locker with digest credentials puts its default ACL
// (the user's digest with every permission, read to the world) on the
// lock's parent and lock node; another user can read them (Inspect works)
// but not delete, change or add to them (NoAuth), nor take the lock or
// force it released (distlock.ErrAccessDenied, at once, naming the
// user, without the password); the holder releases as usual, and another Locker of the
// same user can force-release it.
func TestAuthACL(t *testing.T) {
	s := startAuthServer(t, testbed.ZooKeeperOptions{})
	ctx := ctx10(t)
	alice := s.locker(t, "alice", "alice", alicePW)
	key := uniqueKey(t)
	ls := mustAcquire(t, alice, key)
	parent := alice.Path(key)
	children, _, err := s.admin.Children(parent)
	if err != nil || len(children) != 1 {
		t.Fatalf("children of %s: %v %v", parent, children, err)
	}
	node := parent + "/" + children[0]
	want := fmt.Sprint(zklock.DefaultACL("alice", alicePW))
	for _, p := range []string{parent, node} {
		acl, _, err := s.admin.GetACL(p)
		if err != nil || fmt.Sprint(acl) != want {
			t.Errorf("ACL of %s: %v (%v), want %s", p, acl, err, want)
		}
	}

	bob := connectAs(t, s.Link("bob").Addr(), "bob", bobPW, nil)
	if err := bob.Delete(node, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("bob deletes the holder's node: %v, want NoAuth", err)
	}
	if _, err := bob.Set(node, []byte("mine"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("bob sets the holder's node: %v, want NoAuth", err)
	}
	if _, err := bob.Create(parent+"/x", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("bob creates under the lock: %v, want NoAuth", err)
	}
	if _, _, err := bob.Get(node); err != nil {
		t.Errorf("bob reads the holder's node: %v", err)
	}
	digest := strings.SplitN(zklock.DefaultACL("alice", alicePW)[0].ID, ":", 2)[1]
	if acl, _, err := bob.GetACL(node); err != nil || strings.Contains(fmt.Sprint(acl), digest) {
		t.Errorf("bob reads the ACL of the holder's node: %v %v; the password's digest must not show", acl, err)
	} else {
		t.Logf("the ACL as bob reads it: %v", acl)
	}

	bobL := s.locker(t, "bobL", "bob", bobPW)
	start := time.Now()
	_, err = bobL.Acquire(context.Background(), key) // no deadline: must not retry forever
	wantNotAuthorized(t, "bob's Acquire", "bob", err, time.Since(start))
	info, err := bobL.Inspect(ctx, key)
	if err != nil || !info.Held || info.Holder != distlock.HolderID(ls.Token()) {
		t.Errorf("bob's Inspect: %+v %v", info, err)
	}
	start = time.Now()
	evicted, err := bobL.ForceRelease(ctx, key)
	wantNotAuthorized(t, fmt.Sprintf("bob's ForceRelease (evicted %v)", evicted), "bob", err, time.Since(start))
	anon, err := zklock.New([]string{s.Link("anon").Addr()}, withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if info, err := anon.Inspect(ctx, key); err != nil || !info.Held {
		t.Errorf("Inspect without credentials: %+v %v", info, err)
	}
	_, err = anon.TryAcquire(ctx, key)
	wantNotAuthorized(t, "TryAcquire without credentials", "", err, 0)
	if !strings.Contains(err.Error(), "without credentials") {
		t.Errorf("TryAcquire without credentials: %v", err)
	}
	select {
	case <-ls.Done():
		t.Fatalf("the holder lost its lease: %v", ls.Err())
	default:
	}

	// The holder's own Locker releases; another Locker of alice's evicts.
	mustRelease(t, ls)
	ls = mustAcquire(t, alice, key)
	alice2 := s.locker(t, "alice2", "alice", alicePW)
	if evicted, err := alice2.ForceRelease(ctx, key); !evicted || err != nil {
		t.Fatalf("alice's ForceRelease: %v %v", evicted, err)
	}
	select {
	case <-ls.Done():
	case <-ctx.Done():
		t.Fatal("the evicted lease's Done did not fire")
	}
}

// TestAuthWrongPassword: ZooKeeper accepts any digest credentials, so a
// wrong password shows when a node's ACL refuses the identity it makes:
// Acquire of a lock whose parent the right user made fails at once with
// ErrUnavailable and distlock.ErrAccessDenied, naming the user and not the
// password. A server that requires authentication refuses a Locker
// without credentials the same way, and serves one with them.
func TestAuthWrongPassword(t *testing.T) {
	s := startAuthServer(t, testbed.ZooKeeperOptions{RequireAuth: true})
	ctx := ctx10(t)
	alice := s.locker(t, "alice", "alice", alicePW)
	key := uniqueKey(t)
	ls := mustAcquire(t, alice, key)
	defer mustRelease(t, ls)

	wrong := s.locker(t, "wrong", "alice", "wrong-pw-0000")
	start := time.Now()
	_, err := wrong.Acquire(context.Background(), key)
	wantNotAuthorized(t, "Acquire with a wrong password", "alice", err, time.Since(start))
	if !strings.Contains(err.Error(), "wrong password") {
		t.Errorf("the error does not suggest the password: %v", err)
	}

	anon, err := zklock.New([]string{s.Link("anon").Addr()}, withTick(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	start = time.Now()
	_, err = anon.Acquire(context.Background(), uniqueKey(t))
	wantNotAuthorized(t, "Acquire without credentials where the server requires them", "", err, time.Since(start))
	_, err = anon.Inspect(ctx, key)
	wantNotAuthorized(t, "Inspect without credentials where the server requires them", "", err, 0)
}

// TestAuthAfterReconnect: the credentials are sent again on a new
// connection to the same session and on a new session after an expiry:
// after each, the Locker still creates lock nodes under a parent whose
// ACL admits only its user.
func TestAuthAfterReconnect(t *testing.T) {
	s := startAuthServer(t, testbed.ZooKeeperOptions{})
	ctx := ctx10(t)
	other := s.locker(t, "other", "alice", alicePW)
	key := uniqueKey(t)
	keep := mustAcquire(t, other, key) // keeps alice's parent of key
	defer mustRelease(t, keep)

	const ttl = 2 * time.Second
	l := s.locker(t, "l", "alice", alicePW)
	link := s.Link("l")
	first := mustAcquire(t, l, uniqueKey(t)+"-first", distlock.WithTTL(ttl)) // the session is up and authenticated
	mustRelease(t, first)

	// A new connection, same session.
	link.Reset()
	ctxTry, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	for {
		// The first attempts may meet the reset connection.
		_, err = l.TryAcquire(ctxTry, key, distlock.WithTTL(ttl))
		if !errors.Is(err, distlock.ErrUnavailable) || errors.Is(err, distlock.ErrAccessDenied) || ctxTry.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire after a reconnection: %v, want ErrNotAcquired (a node queued under alice's parent)", err)
	}

	// A new session after an expiry.
	held := mustAcquire(t, l, uniqueKey(t), distlock.WithTTL(ttl))
	link.Blackhole()
	select {
	case <-held.Done():
	case <-time.After(4 * ttl):
		t.Fatal("the lease outlived its session")
	}
	time.Sleep(ttl) // the server expires the session
	link.Heal()
	link.Reset()                                                 // a handshake sent while blackholed was lost: do not wait for go-zookeeper to give it up
	ls := mustAcquire(t, l, uniqueKey(t), distlock.WithTTL(ttl)) // on the new session
	mustRelease(t, ls)
	ctxTry2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	_, err = l.TryAcquire(ctxTry2, key, distlock.WithTTL(ttl))
	if !errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, distlock.ErrUnavailable) {
		t.Fatalf("TryAcquire after an expiry: %v, want ErrNotAcquired (a node queued under alice's parent)", err)
	}
}

// TestAuthProtectedPrefix: where an operator made the prefix with an ACL
// granting only alice (and its parent with one granting her nothing), a
// wrong password cannot create even a lock nobody holds
// (distlock.ErrAccessDenied), and alice locks under it although she may
// not create in the prefix's parent.
func TestAuthProtectedPrefix(t *testing.T) {
	s := startAuthServer(t, testbed.ZooKeeperOptions{})
	top := "/ops-" + strings.ToLower(strings.ReplaceAll(uniqueKey(t), ".", "-"))
	prefix := top + "/locks"
	if _, err := s.admin.Create(top, nil, 0, zk.WorldACL(zk.PermRead)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.Create(prefix, nil, 0, zklock.DefaultACL("alice", alicePW)); err != nil {
		t.Fatal(err)
	}
	open := func(client, password string) *zklock.Locker {
		l, err := zklock.New([]string{s.Link(client).Addr()}, withTick(&zklock.Options{Prefix: prefix, Username: "alice", Password: password}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	key := uniqueKey(t)
	start := time.Now()
	_, err := open("wrong", "wrong-pw-0000").Acquire(context.Background(), key)
	wantNotAuthorized(t, "Acquire under a protected prefix with a wrong password", "alice", err, time.Since(start))
	ls := mustAcquire(t, open("alice", alicePW), key)
	mustRelease(t, ls)
}
