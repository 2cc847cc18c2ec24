package main

import (
	"context"
	"testing"
)

func TestRunOnMem(t *testing.T) {
	if err := run(context.Background(), "mem://example-test", 4, 10); err != nil {
		t.Fatal(err)
	}
}

func TestRunRejectsUnknownScheme(t *testing.T) {
	if err := run(context.Background(), "nosuch://x", 1, 1); err == nil {
		t.Fatal("unknown scheme accepted")
	}
}
