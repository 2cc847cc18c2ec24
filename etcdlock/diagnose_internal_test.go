package etcdlock

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestDiagnosisEndsByUntil: a failed try's diagnosis against a server
// that never answers ends by the request's until, not diagnoseTimeout
// later.
func TestDiagnosisEndsByUntil(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(3 * time.Second))
			_, _ = io.Copy(io.Discard, c) // silent
			_ = c.Close()
		}
	}()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ln.Addr().String()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	l, err := New(cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.dialed = true
	start := time.Now()
	until := start.Add(100 * time.Millisecond)
	_, err = l.do(context.Background(), time.Minute, until, 1, nil, func(context.Context) error {
		return context.DeadlineExceeded
	})
	if err == nil {
		t.Fatal("do succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("do returned %v after start, want by until (100ms)", d)
	}
}
