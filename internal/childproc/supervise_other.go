//go:build !unix

package childproc

import (
	"fmt"
	"os"
)

// supervise: there is no supervisor outside Unix (Self is nil there).
func supervise(int, string, []string, *Sandbox) int {
	fmt.Fprintln(os.Stderr, "agenthost supervisor: not supported on this system")
	return exitCannotRun
}
