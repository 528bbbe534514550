//go:build failpoints && unix

package failpoint

import (
	"fmt"
	"os"
	"syscall"
)

// Enabled reports whether this binary was built with failpoints.
const Enabled = true

var armed = os.Getenv(Env)

// Hit kills the process with SIGKILL when AGENTHOST_FAILPOINT is name,
// after saying so on stderr (so a test knows the point was reached, not
// some other death). Nothing after it runs: no deferred function, no
// flush, no shutdown, as for a process the kernel kills.
func Hit(name string) {
	if armed == "" || armed != name {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint %s reached\n", name)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
