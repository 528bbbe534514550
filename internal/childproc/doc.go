// Package childproc owns how agenthost starts and stops the processes it
// runs (stdio MCP servers, credential plugins and hooks): the file that
// runs, the environment they get, the session they run in, how their whole
// process tree is ended, and an optional supervisor process that ends that
// tree even when the host is SIGKILLed.
//
// It is a leaf package: it imports only the standard library, x/sys and
// the kernel-interface libraries go-landlock and go-seccomp-bpf, so both
// host and plugins can use it.
//
// Sandboxes. A child started through a supervisor with a Sandbox
// (WrapSandboxed) runs confined by the kernel: the supervisor sets the
// rlimits, builds a Landlock ruleset (files by path, TCP by port) and loads
// a seccomp filter (sockets by family and type, io_uring) on the thread
// that then starts the child (its goroutine is locked to it), and the
// child inherits all of it across exec. The supervisor is the fork point
// agenthost owns: Go's os/exec has no hook between fork and exec in the
// child (Go 1.28 adds Landlock to SysProcAttr), and the supervisor costs no
// extra exec. Under the bubblewrap mechanism the supervisor runs the child
// inside bwrap instead of applying Landlock (bubblewrap.go). A sandbox
// that cannot be applied as configured is an error, never a weaker
// sandbox (Check).
//
// Trees. Every child runs in a session of its own (Attr), so its
// descendants can be found and killed together (KillTree, TerminateTree),
// including those that moved to process groups of their own, and (Linux)
// the descendants of any of them that started sessions of their own.
//
// Executables. LookPath is the one rule by which a command names the file
// that runs, and OpenPinned the one way a pinned file is executed: from a
// sealed private copy of the bytes that were hashed.
//
// Host death. On Linux a child gets a parent-death signal, but its own
// children (a server's `sh -c 'worker & exec server'`) do not, so they
// would outlive a SIGKILLed host. A Supervisor closes that gap: the child is
// started through a small supervisor process (the host binary re-executed,
// see MaybeSupervise) that gets SIGTERM when the host dies and then ends
// the child's whole tree. The supervisor is the child subreaper of that
// tree (Linux): a descendant that started a session of its own and whose
// parent exited is reparented to it rather than to init, so the tree it
// ends, when the child exits and when the host dies, is every descendant.
// Without a sandbox a child needs no supervisor of its own: the
// Supervisor's Spawner is one long-lived supervisor per host
// (proctree.Serve, started with the first child), which forks every child
// on request over a socket (its descriptors passed with SCM_RIGHTS), each
// in a session of its own, reports its exit status, delivers signals, and
// is the subreaper of all their trees; an orphan reparented to it goes
// with the tree whose session or group it is in, else with the tree whose
// child exits next. It sees the host die by its socket's end and its
// parent-death signal, and then ends every tree. Library users get the tree kill on Close; a
// program that calls MaybeSupervise first thing in main can use Self as
// its supervisor too.
package childproc
