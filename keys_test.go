package distlock_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestCheckKey: CheckKey refuses exactly the empty key and keys longer
// than MaxKeyLen, in one line naming the limit, and accepts every other
// byte string (NUL, invalid UTF-8, path syntax, hash tags).
func TestCheckKey(t *testing.T) {
	if distlock.MaxKeyLen != 4096 {
		t.Fatalf("MaxKeyLen = %d: the library-wide limit is part of the API (docs/keys.md)", distlock.MaxKeyLen)
	}
	for _, key := range []string{
		"k", "\x00", "a\x00b", "\xff\xfe", "/", "..", "a/b", "a/../b", "a/",
		"{x}", "{", "}", "{}", "distlock:fence", "A", "é", "e\u0301",
		strings.Repeat("k", distlock.MaxKeyLen), strings.Repeat("\xff", distlock.MaxKeyLen),
	} {
		if err := distlock.CheckKey(key); err != nil {
			t.Errorf("CheckKey(%.40q) = %v, want nil", key, err)
		}
	}
	for _, key := range []string{"", strings.Repeat("k", distlock.MaxKeyLen+1), strings.Repeat("\x00", 1<<20)} {
		start := time.Now()
		err := distlock.CheckKey(key)
		if !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("CheckKey of %d bytes = %v, want ErrInvalidArgument", len(key), err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || len(msg) > 200 || time.Since(start) > time.Second {
			t.Errorf("CheckKey of %d bytes: error %q is not one short line", len(key), msg)
		}
		if key != "" && (!strings.Contains(msg, strconv.Itoa(distlock.MaxKeyLen)) || !strings.Contains(msg, "MaxKeyLen")) {
			t.Errorf("CheckKey of %d bytes: %q does not name the limit", len(key), msg)
		}
	}
	// ResolveFor, the check at the top of every acquisition, applies it.
	if _, err := distlock.DefaultOptions().ResolveFor(strings.Repeat("k", 1<<20)); !errors.Is(err, distlock.ErrInvalidArgument) {
		t.Fatalf("ResolveFor of a 1 MiB key: %v", err)
	}
}
