// Package bench holds the performance benchmarks of distlock against real
// servers in containers, side by side with the raw client and with peer
// libraries. It is a separate module so that the library's go.mod depends
// on no peer. docs/benchmarks.md, at the repository root, says what each
// measures, how to run them, and holds the current figures.
package bench
