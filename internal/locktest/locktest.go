// Package locktest holds the small test helpers every backend's tests use,
// so they are written once.
package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// UniqueKey returns a key named after the test with a random suffix.
func UniqueKey(t testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strings.ReplaceAll(t.Name(), "/", ".") + "." + hex.EncodeToString(b)
}

// Eventually polls cond every 10 ms and fails the test if it does not hold
// within d.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// MustAcquire acquires key within 10 s or fails the test.
func MustAcquire(t testing.TB, l distlock.Locker, key string, opts ...distlock.Option) distlock.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ls, err := l.Acquire(ctx, key, opts...)
	if err != nil {
		t.Fatalf("Acquire %s: %v", key, err)
	}
	return ls
}

// MustRelease releases ls within 5 s or fails the test.
func MustRelease(t testing.TB, ls distlock.Lease) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release %s: %v", ls.Key(), err)
	}
}

// ReleaseTwice releases ls, then checks what a released lease reports:
// Err matches distlock.ErrReleased, Done is closed, and a second Release
// returns the first call's nil.
func ReleaseTwice(t testing.TB, ls distlock.Lease) {
	t.Helper()
	MustRelease(t, ls)
	WantErr(t, ls.Err(), distlock.ErrReleased)
	select {
	case <-ls.Done():
	default:
		t.Fatal("Done not closed after Release")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("second Release: %v (want the first call's nil)", err)
	}
}

// WantErr fails the test unless err matches every target.
func WantErr(t testing.TB, err error, targets ...error) {
	t.Helper()
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("error %v: does not match %v", err, target)
		}
	}
}

// NotErr fails the test if err matches target.
func NotErr(t testing.TB, err error, target error) {
	t.Helper()
	if errors.Is(err, target) {
		t.Fatalf("error %v: matches %v, want not", err, target)
	}
}
