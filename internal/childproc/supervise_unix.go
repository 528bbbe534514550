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
// of its own, and ends the rest of the child's tree whenever the child's
// life ends. The supervisor is the child subreaper of that tree (Linux),
// so a descendant that started a session of its own and lost its parent is
// reparented to the supervisor, not to init, and is ended with the rest;
// the supervisor reaps every process reparented to it. With sb, the
// supervisor first sandboxes itself (applySandbox), so the child starts
// sandboxed; a sandbox that cannot be applied means no child at all.
func supervise(extra int, path string, argv []string, sb *Sandbox) int {
	// The child's parent-death signal follows the thread that forks it:
	// this goroutine keeps its thread until the process exits.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Without it (a kernel older than 3.4) the sweep still finds every
	// descendant whose parent is in the tree, as before, and runs after
	// every child: what is left cannot be told from the children here.
	subreaper := becomeSubreaper() == nil

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
	if sb != nil && sb.Mechanism == MechanismBubblewrap {
		dir, _ := os.Getwd()
		cmd.Path = sb.Bubblewrap
		cmd.Args = bubblewrapArgs(sb, path, argv, dir, os.Geteuid() == 0)
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
	// The reaper is the only waiter: it reaps the child (cmd.Wait is never
	// called) and every orphan reparented here.
	done := make(chan childEnd, 1)
	go reap(child, done)
	sweep := func(sig syscall.Signal) int { return signalSupervised(self, child, sig) }

	select {
	case end := <-done:
		// The child is gone; whatever it started is not to outlive it.
		// Nothing left (the common case for a hook) costs no sweep. (The
		// child's group is probed too: where there is no subreaper, its
		// members are orphaned to init, not to the supervisor.)
		if !subreaper || end.left || syscall.Kill(-child, 0) == nil {
			terminateBy(sweep, Grace)
		}
		return end.status
	case sig := <-sigs:
		// Asked to stop, or the host died: the child and its tree get the
		// signal, a grace period, then SIGKILL.
		terminateBy(sweep, Grace)
		select {
		case end := <-done:
			return end.status
		case <-time.After(Grace):
			return 128 + int(sig.(syscall.Signal))
		}
	}
}

// childEnd is how the supervised child ended: the supervisor's exit
// status for it, and whether any process of its tree was still running
// once it had been reaped.
type childEnd struct {
	status int
	left   bool
}

// reap waits for every child of this process until none is left: it
// reports the end of child on done (once), and reaps the orphans
// reparented here, which would otherwise stay zombies.
func reap(child int, done chan<- childEnd) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return // no children left
		case pid == child:
			done <- childEnd{status: exitStatus(ws), left: childrenLeft()}
		}
	}
}

// childrenLeft reaps the children that have exited and reports whether any
// is still running. Called right after the supervised child was reaped,
// it tells whether anything of its tree is left: the child's orphans were
// reparented here before it could be reaped.
func childrenLeft() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return false // ECHILD: none
		case pid == 0:
			return true // children, none of them exited
		}
	}
}

// exitStatus is the supervisor's exit status for the child's end: its exit
// code, or 128+signal as a shell reports it.
func exitStatus(ws syscall.WaitStatus) int {
	switch {
	case ws.Signaled():
		return 128 + int(ws.Signal())
	case ws.Exited():
		return ws.ExitStatus()
	}
	return exitCannotRun
}
