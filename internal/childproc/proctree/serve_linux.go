//go:build linux

package proctree

import (
	"bytes"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

// serve is the long-lived supervisor of Main, its socket on fd 3.
func serve() int { return Serve(3) }

// The messages on a long-lived supervisor's socket (SOCK_SEQPACKET: one
// message a datagram), fields separated by NUL:
//
//	host:  s ID PATH DIR NARGV ARGV... ENV...   (stdin, stdout, stderr and
//	                                            extra descriptors attached)
//	       k ID SIGNAL                          (signal the child)
//	       t ID                                 (end the child's tree)
//	super: p ID PID | e ID MESSAGE | x ID STATUS (started, failed, ended)
const (
	MsgSpawn     = 's'
	MsgSignal    = 'k'
	MsgTerminate = 't'
	MsgStarted   = 'p'
	MsgFailed    = 'e'
	MsgExited    = 'x'
)

// MaxMessage bounds one message on the socket.
const MaxMessage = 256 << 10

// tree is one spawned child: its id on the socket, and the orphans of its
// tree the supervisor has attributed to it.
type tree struct {
	id      string
	orphans map[int]bool
}

// Serve is the long-lived supervisor: it spawns a child for every spawn
// message on sock, each in a session of its own (so off any terminal, and
// its tree found by its session), reports each child's start and exit
// status, delivers signals, and ends each child's tree when the child
// exits. It is the child subreaper of every tree: an orphan of a tree is
// reparented here, attributed to the tree whose child exits next (or that
// its session or group names), and ended with it. When the host goes (EOF
// on sock, or the parent-death SIGTERM) it ends every tree and exits.
func Serve(sock int) int {
	// The children's parent-death signal follows the thread that forks
	// them: every fork happens on this goroutine's thread, kept for life.
	runtime.LockOSThread()
	_ = becomeSubreaper()
	// The socket came as an inherited descriptor (not close-on-exec): no
	// child may hold it, or it could start, signal and end the others.
	syscall.CloseOnExec(sock)
	closeOnExecInherited(sock)
	stop := make(chan os.Signal, 4)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	requests := make(chan request)
	go readRequests(sock, requests)
	self := os.Getpid()
	trees := map[int]*tree{}
	byID := map[string]int{}
	send := func(kind byte, id, value string) {
		msg := append(append(append([]byte{kind, 0}, id...), 0), value...)
		_ = syscall.Sendmsg(sock, msg, nil, nil, 0)
	}
	for {
		select {
		case r, ok := <-requests:
			if !ok {
				endAll(self, trees)
				return 0
			}
			switch r.kind {
			case MsgSpawn:
				pid, err := spawn(r)
				if err != nil {
					send(MsgFailed, r.id, err.Error())
					continue
				}
				trees[pid] = &tree{id: r.id, orphans: map[int]bool{}}
				byID[r.id] = pid
				send(MsgStarted, r.id, strconv.Itoa(pid))
			case MsgSignal:
				if pid, ok := byID[r.id]; ok {
					_ = syscall.Kill(pid, syscall.Signal(r.signal))
				}
			case MsgTerminate:
				if pid, ok := byID[r.id]; ok {
					go TerminateBy(treeSignal(pid, trees[pid]), Grace)
				}
			}
		case <-chld:
			var ended []exited
			alone := false
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if err == syscall.EINTR {
					continue
				}
				if err != nil || pid <= 0 {
					alone = err == syscall.ECHILD
					break
				}
				t, ok := trees[pid]
				if !ok {
					continue // an orphan reaped
				}
				delete(trees, pid)
				delete(byID, t.id)
				ended = append(ended, exited{pid, t, ws})
			}
			for _, e := range ended {
				// Whatever the child started is not to outlive it. With no
				// child left here at all (alone), nothing it started lives:
				// a live descendant of an exited child is reparented to this
				// subreaper, or to a live descendant that is, so it would be
				// a child of this process or have one for an ancestor.
				if !alone {
					attributeOrphans(trees, e.t)
					if len(e.t.orphans) > 0 || syscall.Kill(-e.pid, 0) == nil {
						go TerminateBy(treeSignal(e.pid, e.t), Grace)
					}
				}
				send(MsgExited, e.t.id, strconv.Itoa(exitStatus(e.ws)))
			}
		case <-stop:
			endAll(self, trees)
			return 0
		}
	}
}

// exited is a spawned child reaped, with its tree and status.
type exited struct {
	pid int
	t   *tree
	ws  syscall.WaitStatus
}

// request is one message of the host's.
type request struct {
	kind      byte
	id        string
	path, dir string
	argv, env []string
	signal    int
	files     []int
}

// readRequests decodes the host's messages until the socket ends, and
// closes requests then.
func readRequests(sock int, requests chan<- request) {
	defer close(requests)
	buf := make([]byte, MaxMessage)
	oob := make([]byte, syscall.CmsgSpace(64*4))
	for {
		// Close-on-exec from the moment they arrive: a child forked while
		// another's descriptors wait here must not inherit them (it could
		// read that server's stdin, secure arguments and all). ForkExec
		// clears the flag on the ones it puts at 0, 1, 2...
		n, oobn, _, _, err := syscall.Recvmsg(sock, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		var files []int
		if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if fds, err := syscall.ParseUnixRights(&m); err == nil {
					files = append(files, fds...)
				}
			}
		}
		r, ok := parseRequest(buf[:n])
		if !ok {
			closeAll(files)
			continue
		}
		r.files = files
		requests <- r
	}
}

// parseRequest reads one message (the fields of the table above).
func parseRequest(msg []byte) (request, bool) {
	var fields []string
	start := 0
	for i, b := range msg {
		if b == 0 {
			fields = append(fields, string(msg[start:i]))
			start = i + 1
		}
	}
	fields = append(fields, string(msg[start:]))
	if len(fields) < 2 || len(fields[0]) != 1 {
		return request{}, false
	}
	r := request{kind: fields[0][0], id: fields[1]}
	switch r.kind {
	case MsgSpawn:
		if len(fields) < 5 {
			return request{}, false
		}
		n, err := strconv.Atoi(fields[4])
		if err != nil || n < 1 || 5+n > len(fields) {
			return request{}, false
		}
		r.path, r.dir, r.argv, r.env = fields[2], fields[3], fields[5:5+n], fields[5+n:]
		if len(r.env) == 1 && r.env[0] == "" {
			r.env = nil
		}
	case MsgSignal:
		if len(fields) != 3 {
			return request{}, false
		}
		sig, err := strconv.Atoi(fields[2])
		if err != nil {
			return request{}, false
		}
		r.signal = sig
	case MsgTerminate:
	default:
		return request{}, false
	}
	return r, true
}

// spawn starts r's child with r's descriptors (stdin, stdout, stderr, then
// extra ones from 3 on), in a session of its own, SIGKILLed if the
// supervisor dies; the descriptors are closed here once it has them.
func spawn(r request) (int, error) {
	defer closeAll(r.files)
	if len(r.files) < 3 {
		return 0, syscall.EBADF
	}
	files := make([]uintptr, len(r.files))
	for i, fd := range r.files {
		files[i] = uintptr(fd)
	}
	return syscall.ForkExec(r.path, r.argv, &syscall.ProcAttr{Dir: r.dir, Env: r.env, Files: files,
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}})
}

// closeOnExecInherited marks close-on-exec every descriptor above stderr
// the supervisor inherited besides sock (whatever its host's own parent
// left open): none of them is a child's to hold.
func closeOnExecInherited(sock int) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 && fd != sock {
			syscall.CloseOnExec(fd)
		}
	}
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}

// attributeOrphans gives t (a tree whose child has just exited) the
// orphans reparented here that no live tree's session or group names and
// no tree has yet: the child's own orphans were reparented as it exited.
// It reads only this process's children (/proc/self/task/*/children),
// not all of /proc: a child that leaves nothing costs no scan.
func attributeOrphans(live map[int]*tree, t *tree) {
	owned := map[int]bool{}
	for _, lt := range live {
		for p := range lt.orphans {
			owned[p] = true
		}
	}
	for _, pid := range ownChildren() {
		if live[pid] != nil || owned[pid] {
			continue
		}
		st, ok := ReadStat(pid)
		if !ok || st.State == 'Z' {
			continue
		}
		switch {
		case live[st.Sid] != nil:
			live[st.Sid].orphans[pid] = true
		case live[st.Pgrp] != nil:
			live[st.Pgrp].orphans[pid] = true
		default:
			t.orphans[pid] = true
		}
	}
}

// ownChildren lists this process's children, from the children file of
// each of its threads (Linux 3.5 and later, CONFIG_PROC_CHILDREN); where
// there is none it falls back on every process of /proc whose parent
// this is.
func ownChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	var buf [512]byte
	for _, task := range tasks {
		b, err := readProcFile("/proc/self/task/"+task.Name()+"/children", buf[:])
		if err != nil {
			self := os.Getpid()
			pids = pids[:0]
			forEachProcess(func(st Stat) {
				if st.PPid == self {
					pids = append(pids, st.Pid)
				}
			})
			return pids
		}
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// treeSignal signals the tree of child pid: its session, its group, the
// orphans attributed to it, and every descendant of theirs.
func treeSignal(pid int, t *tree) func(syscall.Signal) int {
	orphans := map[int]bool{}
	if t != nil {
		for p := range t.orphans {
			orphans[p] = true
		}
	}
	return func(sig syscall.Signal) int {
		return SignalMembers(func(st Stat) bool { return st.Sid == pid || st.Pgrp == pid || orphans[st.Pid] }, sig)
	}
}

// endAll ends every tree (the host is gone): every process reparented
// here, every spawned child's session and group, and their descendants;
// it returns once they are gone or SIGKILLed.
func endAll(self int, trees map[int]*tree) {
	if len(trees) == 0 && (reapOrphans() || !hasLiveChild()) {
		// Nothing spawned is alive and nothing was reparented here: the
		// sweep below would read every process of /proc to find none.
		return
	}
	TerminateBy(func(sig syscall.Signal) int {
		return SignalMembers(func(st Stat) bool {
			return st.PPid == self || trees[st.Sid] != nil || trees[st.Pgrp] != nil
		}, sig)
	}, Grace)
}

// reapOrphans reaps every child that has exited, with no spawned child
// alive (the only children are orphans reparented here), and reports
// whether no child at all is left: then no process of any tree lives, as
// in Serve's reaping, and hasLiveChild's reading of /proc is not needed.
func reapOrphans() bool {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
		case err == syscall.ECHILD:
			return true
		case err != nil || pid <= 0:
			return false
		}
	}
}

// hasLiveChild reports whether a process other than a zombie has this one
// as its parent. With no spawned child alive, endAll's members are only
// such processes (the orphans reparented here, and through them their
// descendants: a live descendant's nearest live ancestor here is one of
// this process's children, the subreaper), so with none there is nothing
// to end.
func hasLiveChild() bool {
	for _, pid := range ownChildren() {
		if st, ok := ReadStat(pid); ok && st.State != 'Z' {
			return true
		}
	}
	return false
}

// forEachProcess calls fn with every process of /proc.
func forEachProcess(fn func(st Stat)) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range dir {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadStat(p); ok {
			fn(st)
		}
	}
}
