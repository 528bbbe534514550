// Package bench owns agenthost's performance suite: `go test -bench`
// benchmarks of the host's per-call overhead (in-process HTTP and stdio,
// each beside a bare mcp-go client on the same server), catalog and model
// view builds, idle-session memory, concurrency, credential resolution,
// CLI startup and audit throughput. The figures, targets and how to read
// them are in docs/PERFORMANCE.md; `make bench` runs the suite through
// cmd/benchtable, which interleaves the paired benchmarks and prints the
// table of medians and ratios. The package has no non-test code.
package bench
