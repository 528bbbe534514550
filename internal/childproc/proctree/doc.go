// Package proctree owns the supervisor's part of ending a process tree:
// running one child as its subreaper, finding the tree's members (Linux:
// from /proc), and the SIGTERM, grace, SIGKILL sequence. Package childproc
// builds on it; package childproc/supervisor runs it from an initializer.
//
// It imports only os, os/signal, syscall and packages the runtime
// initializes before those, on purpose: Go initializes the lexically
// smallest package whose imports are all initialized, so a package that
// waits for any later standard package (os/exec, path/filepath, fmt's
// dependants, x/sys) also waits for every module package ready by then
// (protobuf descriptors, cel-go's standard library, OpenTelemetry's
// tables: about 200 initializers in the agenthost CLI, 7 ms of CPU per
// supervisor start). TestImportsStaySmall keeps the list.
package proctree
