//go:build unix

package proctree

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// Main supervises the child that args (after Arg) name and returns the
// exit status, or reports false when args ask for more than this package
// does (a sandbox: childproc.MaybeSupervise applies it).
func Main(args []string) (int, bool) {
	nameSelf()
	if len(args) > 0 && args[0] == SandboxArg {
		return 0, false
	}
	if len(args) > 0 && args[0] == ServeArg {
		return serve(), true
	}
	c, err := ParseArgs(args)
	if err != nil {
		Complain(err)
		return ExitCannotRun, true
	}
	return Supervise(c), true
}

// Supervise runs c as the supervisor's child, in a process group of its
// own, and ends the rest of the child's tree whenever the child's life
// ends: when it exits, when the supervisor is asked to stop (SIGTERM,
// SIGINT, SIGHUP: also the host's death, as the supervisor's parent-death
// signal). The supervisor is the child subreaper of that tree (Linux), so
// a descendant that started a session of its own and lost its parent is
// reparented to the supervisor, not to init, and is ended with the rest;
// the supervisor reaps every process reparented to it. It returns the
// child's exit status (128+signal for a signal).
func Supervise(c Child) int {
	// The child's parent-death signal follows the thread that forks it:
	// this goroutine keeps its thread until the process exits.
	runtime.LockOSThread()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Without it (a kernel older than 3.4) the sweep still finds every
	// descendant whose parent is in the tree, as before, and runs after
	// every child: what is left cannot be told from the children here.
	subreaper := becomeSubreaper() == nil

	files := make([]*os.File, 3+c.Extra)
	files[0], files[1], files[2] = os.Stdin, os.Stdout, os.Stderr
	for i := 3; i < len(files); i++ {
		files[i] = os.NewFile(uintptr(i), "fd"+strconv.Itoa(i))
	}
	if c.Before != nil {
		if err := c.Before(); err != nil {
			Complain(err)
			return ExitCannotRun
		}
	}
	proc, err := os.StartProcess(c.Path, c.Argv, &os.ProcAttr{Files: files, Sys: supervisedAttr()})
	if err != nil {
		Complain(err)
		return ExitCannotRun
	}
	if c.After != nil {
		c.After()
	}
	for _, f := range files[3:] {
		_ = f.Close()
	}
	self, child := os.Getpid(), proc.Pid
	// The reaper is the only waiter: it reaps the child (proc.Wait is
	// never called) and every orphan reparented here.
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
			TerminateBy(sweep, Grace)
		}
		return end.status
	case sig := <-sigs:
		// Asked to stop, or the host died: the child and its tree get the
		// signal, a grace period, then SIGKILL.
		TerminateBy(sweep, Grace)
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
	return ExitCannotRun
}
