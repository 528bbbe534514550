//go:build linux

package main

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

const prSetChildSubreaper = 36

func main() {
	if len(os.Args) < 3 {
		os.Stderr.WriteString("usage: treerusage OUTFILE PATH [ARG...]\n")
		os.Exit(2)
	}
	out, argv := os.Args[1], os.Args[2:]
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fail("prctl(PR_SET_CHILD_SUBREAPER): " + e.Error())
	}
	began := time.Now()
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		fail("start " + argv[0] + ": " + err.Error())
	}
	var status syscall.WaitStatus
	var mine syscall.Rusage
	for {
		_, err = syscall.Wait4(pid, &status, 0, &mine)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		fail("wait: " + err.Error())
	}
	wall := time.Since(began)
	// Reap the rest of the tree: whatever outlived its parent is ours now.
	// A tree that does not end is a failure of what is measured.
	time.AfterFunc(30*time.Second, func() { fail("the process tree did not end within 30s of its root") })
	for {
		_, err := syscall.Wait4(-1, nil, 0, nil)
		if err == syscall.ECHILD {
			break
		}
		if err != nil && err != syscall.EINTR {
			fail("wait: " + err.Error())
		}
	}
	var all syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &all); err != nil {
		fail("getrusage: " + err.Error())
	}
	code := status.ExitStatus()
	if status.Signaled() {
		code = 128 + int(status.Signal())
	}
	line := strconv.FormatInt(wall.Nanoseconds(), 10) + " " + strconv.FormatInt(cpu(&all), 10) + " " +
		strconv.FormatInt(cpu(&mine), 10) + " " + strconv.FormatInt(all.Maxrss, 10) + " " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(out, []byte(line), 0o600); err != nil {
		fail(err.Error())
	}
}

func cpu(ru *syscall.Rusage) int64 {
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func fail(msg string) {
	os.Stderr.WriteString("treerusage: " + msg + "\n")
	os.Exit(125)
}
