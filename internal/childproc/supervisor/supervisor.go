// Package supervisor owns starting a program as a supervisor before the
// rest of it initializes: importing it (for its side effect) makes a
// program started as a childproc.Supervisor supervise its child from this
// package's initializer (proctree.Main), and exit there. A start with a
// sandbox is left to childproc.MaybeSupervise, which the program calls
// first thing in main (the sandbox needs Landlock and seccomp).
//
// Go initializes packages in the order of their import paths, each as soon
// as everything it imports is initialized; this package imports only os
// and proctree, which imports only os, os/signal and syscall, so it runs
// after some 25 initializers of the standard library rather than the 200
// of a large program (the agenthost CLI's schema compilers, protobuf
// descriptors and SQL drivers, tens of milliseconds on a loaded machine).
// A supervisor runs once per hook call and per stdio server, so that time
// was paid on every one. docs/PERFORMANCE.md ("The supervisor") has the
// figures.
package supervisor

import (
	"os"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

func init() {
	if len(os.Args) < 2 || os.Args[1] != proctree.Arg {
		return
	}
	if code, ok := proctree.Main(os.Args[2:]); ok {
		os.Exit(code)
	}
}
