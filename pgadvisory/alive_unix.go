//go:build unix

package pgadvisory

import (
	"net"
	"syscall"
)

// alive reports whether an idle connection is still open: a non-blocking
// peek (one system call) finds nothing to read. An idle session receives
// nothing unless the server ended it (a FATAL message, then EOF). It uses
// Control, not Read: pgx's background reader may still be parked in a
// Read on the connection (started by a slow write), holding its read lock.
func alive(nc net.Conn) bool {
	sc, ok := netConn(nc).(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	ok = true
	var buf [1]byte
	err = rc.Control(func(fd uintptr) {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
	})
	return ok && err == nil
}
