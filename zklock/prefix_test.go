package zklock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/zklock"
)

// TestPrefixRefusedLikeZooKeeper: a prefix ZooKeeper's path check would
// refuse (invalid UTF-8, control characters, U+007F-U+009F, U+FFF0 and
// above, the private-use area) fails New with ErrInvalidArgument, one
// line, instead of making every later call fail with "invalid path".
func TestPrefixRefusedLikeZooKeeper(t *testing.T) {
	for _, p := range []string{"/t\xff", "/t\x01", "/t\x1f", "/t\u007f", "/t\u0085", "/t\ufff0", "/t\ue000", "/a/\xc3"} {
		l, err := zklock.New([]string{"127.0.0.1:1"}, &zklock.Options{Prefix: p})
		if err == nil {
			l.Close()
			t.Errorf("prefix %q accepted", p)
			continue
		}
		if !errors.Is(err, distlock.ErrInvalidArgument) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("prefix %q: %v, want one-line ErrInvalidArgument naming the prefix", p, err)
		}
	}
	for _, p := range []string{"/distlock", "/app/locks", "/é/ü", "/t~x"} {
		l, err := zklock.New([]string{"127.0.0.1:1"}, &zklock.Options{Prefix: p})
		if err != nil {
			t.Errorf("prefix %q refused: %v", p, err)
			continue
		}
		l.Close()
	}
}
