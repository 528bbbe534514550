//go:build unix

package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

// supervise runs path (argv) as the supervisor's child, in a process group
// of its own inside the supervisor's session, and ends the session's other
// members whenever the child's life ends. With sb, the supervisor first
// sandboxes itself (applySandbox), so the child starts sandboxed; a
// sandbox that cannot be applied means no child at all.
func supervise(extra int, path string, argv []string, sb *Sandbox) int {
	// The child's parent-death signal follows the thread that forks it:
	// this goroutine keeps its thread until the process exits.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	files := make([]*os.File, extra)
	for i := range files {
		files[i] = os.NewFile(uintptr(3+i), fmt.Sprintf("fd%d", 3+i))
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		ExtraFiles:  files,
		SysProcAttr: supervisedAttr(),
	}
	var sandboxed *applied
	if sb != nil {
		a, err := applySandbox(sb)
		if err != nil {
			fmt.Fprintf(os.Stderr, "agenthost supervisor: %v\n", err)
			return exitCannotRun
		}
		sandboxed = a
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "agenthost supervisor: %v\n", err)
		return exitCannotRun
	}
	sandboxed.started()
	for _, f := range files {
		_ = f.Close()
	}
	self, child := os.Getpid(), cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	select {
	case err := <-done:
		// The child is gone; whatever it started is not to outlive it.
		terminate(self, child, Grace)
		return exitStatus(cmd, err)
	case sig := <-sigs:
		// Asked to stop, or the host died: the child and its tree get the
		// signal, a grace period, then SIGKILL.
		terminate(self, child, Grace)
		select {
		case err := <-done:
			return exitStatus(cmd, err)
		case <-time.After(Grace):
			return 128 + int(sig.(syscall.Signal))
		}
	}
}

// exitStatus is the supervisor's exit status for the child's end: its exit
// code, or 128+signal as a shell reports it.
func exitStatus(cmd *exec.Cmd, err error) int {
	st := cmd.ProcessState
	if st == nil {
		return exitCannotRun
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return exitCannotRun
	}
	return st.ExitCode()
}
