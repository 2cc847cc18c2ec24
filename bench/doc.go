// Package bench holds the performance benchmarks of distlock against real
// servers in containers, side by side with the raw client and with peer
// libraries. It is a separate module so that the library's go.mod depends
// on no peer. See README.md for how to run them and the measured numbers.
package bench
