//go:build !unix

package childproc

import (
	"fmt"
	"os"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

// supervise: there is no supervisor outside Unix (Self is nil there).
func supervise(proctree.Child, *Sandbox) int {
	fmt.Fprintln(os.Stderr, "agenthost supervisor: not supported on this system")
	return exitCannotRun
}
