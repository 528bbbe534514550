// Command treerusage runs a command as the subreaper of its whole process
// tree and reports what the tree cost, for the whole-run benchmarks of
// package bench (BenchmarkWholeRun):
//
//	treerusage OUTFILE PATH [ARG...]
//
// It starts PATH with ARGs (its own stdin, stdout, stderr and environment),
// adopts every process of the tree that outlives its parent
// (PR_SET_CHILD_SUBREAPER), waits for all of them, and writes one line to
// OUTFILE:
//
//	wall-ns cpu-ns main-cpu-ns peak-rss-KiB exit-status
//
// wall is until PATH's own process exits; cpu is user+system time of
// every process of the tree (getrusage RUSAGE_CHILDREN once all are
// reaped), main-cpu that of PATH's process and the descendants it waited
// for itself; peak RSS the largest of any one process of the tree.
//
// It is a process of its own, and a small one, because a child started
// with vfork (as Go starts every child) inherits its parent's RSS
// high-water mark at exec: a large parent would raise every figure. It
// imports only os, strconv, syscall and time for the same reason.
package main
