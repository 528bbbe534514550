//go:build !unix

package childproc

// KillGroupTree: process groups are a Unix idea; KillTree kills the
// process itself.
func KillGroupTree(pid int) { KillTree(pid) }

// KillGroupLeftovers: nothing can be found once the child has exited.
func KillGroupLeftovers(int) {}
