//go:build unix && !linux

package proctree

// serve: a long-lived supervisor needs Linux (a subreaper, /proc).
func serve() int { return ExitCannotRun }
