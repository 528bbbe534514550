// Package childproc owns how agenthost starts and stops the processes it
// runs (stdio MCP servers, credential plugins and hooks): the file that
// runs, the environment they get, the session they run in, how their whole
// process tree is ended, and an optional supervisor process that ends that
// tree even when the host is SIGKILLed.
//
// It is a leaf package: it imports only the standard library and x/sys, so
// both host and plugins can use it.
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
// the child's whole tree. Library users get the tree kill on Close; a
// program that calls MaybeSupervise first thing in main can use Self as
// its supervisor too.
package childproc
