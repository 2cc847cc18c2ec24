package main

import (
	"context"
	"testing"
)

// TestRunOnMem checks that the example's workers lose no increment on the
// in-process backend.
func TestRunOnMem(t *testing.T) {
	if err := run(context.Background(), "mem://example-test", 4, 10); err != nil {
		t.Fatal(err)
	}
}

// TestRunRejectsUnknownScheme checks that a URL of an unregistered scheme
// is an error, not a silent default.
func TestRunRejectsUnknownScheme(t *testing.T) {
	if err := run(context.Background(), "nosuch://x", 1, 1); err == nil {
		t.Fatal("unknown scheme accepted")
	}
}
