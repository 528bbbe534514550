// Package supervisor owns starting a program as a supervisor before the
// rest of it initializes: importing it (for its side effect) makes a
// program started as a childproc.Supervisor run childproc.MaybeSupervise
// from this package's initializer, and exit there.
//
// Go initializes packages in the order of their import paths, each as soon
// as everything it imports is initialized; this package imports only
// childproc, which imports the standard library, x/sys and the two kernel
// libraries, so it runs before the packages of a large program (the
// agenthost CLI's schema compilers, protobuf descriptors and SQL drivers,
// tens of milliseconds on a loaded machine). A supervisor runs once per
// hook call, so that time was paid on every call. docs/PERFORMANCE.md
// ("A trivial hook's overhead") has the figures.
package supervisor

import "github.com/agenthost/agenthost/internal/childproc"

func init() { childproc.MaybeSupervise() }
