//go:build !unix

package proctree

// Main: there is no supervisor outside Unix; childproc.MaybeSupervise
// says so.
func Main([]string) (int, bool) { return 0, false }
