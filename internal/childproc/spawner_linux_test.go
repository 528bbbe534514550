//go:build linux

package childproc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
	"github.com/agenthost/agenthost/internal/proctest"
)

// testSpawner is a long-lived supervisor run from the test binary (its
// TestMain supervises when asked).
func testSpawner(t *testing.T) *Spawner {
	t.Helper()
	sp := NewSpawner(os.Args[0])
	t.Cleanup(func() {
		if sp.proc != nil {
			_ = sp.proc.Kill()
			_, _ = sp.proc.Wait()
		}
	})
	return sp
}

// nullFiles are stdin, stdout and stderr on /dev/null.
func nullFiles(t *testing.T) []*os.File {
	t.Helper()
	f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return []*os.File{f, f, f}
}

func spawnSh(t *testing.T, sp *Spawner, script string, env ...string) *Spawned {
	t.Helper()
	c, err := sp.Start("/bin/sh", []string{"sh", "-c", script}, env, "/", nullFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSpawnerExitStatus: the child's exit status, and 128+signal for one
// killed by a signal; a child started after another exited; a missing
// executable fails Start.
func TestSpawnerExitStatus(t *testing.T) {
	sp := testSpawner(t)
	if got := spawnSh(t, sp, "exit 7").Wait(); got != 7 {
		t.Fatalf("exit status %d, want 7", got)
	}
	if got := spawnSh(t, sp, "exit 0").Wait(); got != 0 {
		t.Fatalf("the child after one that exited: status %d, want 0", got)
	}
	c := spawnSh(t, sp, "exec sleep 300")
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := c.Wait(); got != 128+int(syscall.SIGTERM) {
		t.Fatalf("signalled child: status %d, want %d", got, 128+int(syscall.SIGTERM))
	}
	if _, err := sp.Start("/no/such/program", []string{"x"}, nil, "/", nullFiles(t)); err == nil {
		t.Fatal("a missing program started")
	}
}

// TestSpawnerBigCommands: a command whose arguments and environment fit
// proctree.MaxMessage starts, however small the socket's default send
// buffer (212,992 bytes on Linux: the request of a 220 KiB environment
// failed with EMSGSIZE); one that does not fit fails before anything is
// sent with ErrSpawnTooLarge, the error naming the sizes and the limit.
func TestSpawnerBigCommands(t *testing.T) {
	sp := testSpawner(t)
	env := func(kib int) []string {
		var env []string
		for i := range kib {
			// 1 KiB each with its NUL on the socket.
			env = append(env, fmt.Sprintf("V%d=%s", i, strings.Repeat("x", 1021-len(strconv.Itoa(i)))))
		}
		return env
	}
	c, err := sp.Start("/bin/sh", []string{"sh", "-c", "exit 3"}, env(220), "/", nullFiles(t))
	if err != nil {
		t.Fatalf("a 220 KiB environment: %v", err)
	}
	if got := c.Wait(); got != 3 {
		t.Fatalf("status %d, want 3", got)
	}
	_, err = sp.Start("/bin/sh", []string{"sh", "-c", "exit 3"}, env(300), "/", nullFiles(t))
	if !errors.Is(err, ErrSpawnTooLarge) {
		t.Fatalf("a 300 KiB environment: %v, want ErrSpawnTooLarge", err)
	}
	if want := "the command's arguments and environment are too large for the supervisor: arguments 13 bytes, environment 300 KiB, at most 256 KiB together"; err.Error() != want {
		t.Errorf("error %q\nwant %q", err, want)
	}
	if _, err = sp.Start("/bin/echo", env(300), nil, "/", nullFiles(t)); !errors.Is(err, ErrSpawnTooLarge) || !strings.Contains(err.Error(), ": arguments 300 KiB, environment 0 bytes,") {
		t.Errorf("300 KiB of arguments: %v", err)
	}
	if got := spawnSh(t, sp, "exit 4").Wait(); got != 4 {
		t.Fatalf("the child after a refused one: status %d, want 4", got)
	}
}

// TestSpawnerManyChildren: children started at once each get their own
// exit status.
func TestSpawnerManyChildren(t *testing.T) {
	sp := testSpawner(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			c, err := sp.Start("/bin/sh", []string{"sh", "-c", fmt.Sprintf("exit %d", i)}, nil, "/", nullFiles(t))
			if err != nil {
				errs <- err
				return
			}
			if got := c.Wait(); got != i {
				errs <- fmt.Errorf("child %d: status %d", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSpawnerEndsATreeWithItsChild: what a child leaves running (a
// background job; an orphan in a session of its own) ends when it exits,
// while another child's tree lives on.
func TestSpawnerEndsATreeWithItsChild(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program (util-linux)")
	}
	sp := testSpawner(t)
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	keeps := spawnSh(t, sp, `sleep 300 >/dev/null 2>&1 </dev/null & echo $! > `+other+`; exec sleep 300`)
	t.Cleanup(func() { _ = keeps.Terminate() })
	otherPid := proctest.ReadPid(t, other)
	for _, script := range []string{
		`sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE"; exit 3`,
		`( setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE" ); exit 3`,
	} {
		pidfile := filepath.Join(dir, "pid")
		_ = os.Remove(pidfile)
		c := spawnSh(t, sp, script, "PIDFILE="+pidfile)
		if got := c.Wait(); got != 3 {
			t.Fatalf("status %d, want 3", got)
		}
		pid := proctest.ReadPid(t, pidfile)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		proctest.WaitGone(t, "the child's leftover", pid, 3*time.Second)
	}
	if !proctest.Alive(otherPid) {
		t.Fatal("another child's tree was ended with it")
	}
}

// TestSpawnerEndsLeftoversWhenNoChildLives: the host goes after its only
// child exited but while a leftover of the child's tree (one that ignores
// SIGTERM, so the tree's own ending is still in its grace) lives on: the
// supervisor, with no spawned child alive, still ends it before it exits.
func TestSpawnerEndsLeftoversWhenNoChildLives(t *testing.T) {
	sp := testSpawner(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	c := spawnSh(t, sp, `(trap '' TERM; exec sleep 300) >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE"; exit 0`, "PIDFILE="+pidfile)
	if got := c.Wait(); got != 0 {
		t.Fatalf("status %d, want 0", got)
	}
	pid := proctest.ReadPid(t, pidfile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	// The host's parent-death signal, as its supervisor gets it.
	if err := sp.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.proc.Wait(); err != nil {
		t.Fatal(err)
	}
	sp.proc = nil
	proctest.WaitGone(t, "the leftover", pid, 5*time.Second)
}

// TestSpawnerHostDeathEndsEveryTree: when the host is SIGKILLed, every
// tree its supervisor spawned ends: the children and what they started,
// with the supervisor started by the first Start or prestarted.
func TestSpawnerHostDeathEndsEveryTree(t *testing.T) {
	for _, prestart := range []string{"", "1"} {
		t.Run("prestart="+prestart, func(t *testing.T) {
			dir := t.TempDir()
			host := exec.Command(os.Args[0])
			host.Env = append(os.Environ(), "CHILDPROC_SPAWN_HOST="+dir, "CHILDPROC_SPAWN_PRESTART="+prestart)
			host.SysProcAttr = Attr(syscall.SIGKILL)
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			var pids []int
			for i := range 3 {
				pids = append(pids, proctest.ReadPid(t, filepath.Join(dir, fmt.Sprint("child", i))),
					proctest.ReadPid(t, filepath.Join(dir, fmt.Sprint("grandchild", i))))
			}
			for _, pid := range pids {
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			}
			_ = host.Process.Kill()
			_ = host.Wait()
			for _, pid := range pids {
				proctest.WaitGone(t, "a spawned tree's process", pid, 5*time.Second)
			}
		})
	}
}

// spawnHost is the host of TestSpawnerHostDeathEndsEveryTree: it spawns
// three trees, writes their pids into dir, and waits to be killed.
func spawnHost(dir string) int {
	sp := NewSpawner(os.Args[0])
	if os.Getenv("CHILDPROC_SPAWN_PRESTART") == "1" {
		sp.Prestart()
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 1
	}
	for i := range 3 {
		script := fmt.Sprintf(`sleep 300 >/dev/null 2>&1 </dev/null & echo $! > %s/grandchild%d.tmp; mv %s/grandchild%d.tmp %s/grandchild%d; echo $$ > %s/child%d.tmp; mv %s/child%d.tmp %s/child%d; exec sleep 300`,
			dir, i, dir, i, dir, i, dir, i, dir, i, dir, i)
		if _, err := sp.Start("/bin/sh", []string{"sh", "-c", script}, nil, "/", []*os.File{null, null, null}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	select {}
}

// BenchmarkSpawn: the CPU of starting /bin/true under a supervisor, the
// host's and the supervisor's together: through the long-lived supervisor
// (spawner: a fork and the child's exec) and through a supervisor
// re-executed for each child (reexec: Wrap), both of the binary in
// AGENTHOST_BENCH_BIN (the agenthost CLI).
func BenchmarkSpawn(b *testing.B) {
	bin := os.Getenv("AGENTHOST_BENCH_BIN")
	if bin == "" {
		b.Skip("AGENTHOST_BENCH_BIN names no agenthost binary")
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	b.Run("spawner", func(b *testing.B) {
		sp := NewSpawner(bin)
		if c, err := sp.Start("/bin/true", []string{"true"}, nil, "/", []*os.File{null, null, null}); err != nil {
			b.Fatal(err)
		} else {
			c.Wait()
		}
		defer func() { _ = sp.proc.Kill(); _, _ = sp.proc.Wait() }()
		self0, sup0 := selfCPU(), procCPU(sp.proc.Pid)
		for b.Loop() {
			c, err := sp.Start("/bin/true", []string{"true"}, nil, "/", []*os.File{null, null, null})
			if err != nil {
				b.Fatal(err)
			}
			if st := c.Wait(); st != 0 {
				b.Fatalf("status %d", st)
			}
		}
		cpu := selfCPU() - self0 + procCPU(sp.proc.Pid) - sup0
		b.ReportMetric(float64((selfCPU()-self0).Microseconds())/1000/float64(b.N), "host-ms/op")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
	b.Run("reexec", func(b *testing.B) {
		sup := &Supervisor{Path: bin}
		self0, kids0 := selfCPU(), childrenCPU()
		for b.Loop() {
			cmd := exec.Command("/bin/true")
			cmd.SysProcAttr = Attr(syscall.SIGTERM)
			sup.Wrap(cmd)
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
		cpu := selfCPU() - self0 + childrenCPU() - kids0
		b.ReportMetric(float64((selfCPU()-self0).Microseconds())/1000/float64(b.N), "host-ms/op")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
}

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func selfCPU() time.Duration     { return rusage(syscall.RUSAGE_SELF) }
func childrenCPU() time.Duration { return rusage(syscall.RUSAGE_CHILDREN) }

// procCPU is pid's CPU and its reaped children's, from /proc/PID/stat
// (utime, stime, cutime, cstime in clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	var ticks int64
	for _, k := range []int{11, 12, 13, 14} { // fields 14-17, after state (3)
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// TestSpawnedChildHoldsOnlyItsOwnDescriptors: a child of the long-lived
// supervisor has its stdin, stdout and stderr and nothing else: not the
// supervisor's socket (a child holding it could start, signal or end the
// host's other children), nor the pipes of another child spawned around it
// (it could read that server's stdin, which carries its secure arguments).
func TestSpawnedChildHoldsOnlyItsOwnDescriptors(t *testing.T) {
	sp := testSpawner(t)
	other := spawnSh(t, sp, "exec sleep 300")
	t.Cleanup(func() { _ = other.Signal(syscall.SIGKILL); other.Wait() })
	for range 5 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		files := nullFiles(t)
		c, err := sp.Start("/bin/sh", []string{"sh", "-c", `exec ls -l /proc/self/fd`}, nil, "/", []*os.File{files[0], w, files[2]})
		_ = w.Close()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(r)
		_ = r.Close()
		c.Wait()
		// Beyond 0, 1 and 2, ls holds only the directory it lists: a
		// socket or a pipe there came from the host or the supervisor.
		for _, line := range strings.Split(string(out), "\n") {
			name, target, ok := strings.Cut(line, " -> ")
			fields := strings.Fields(name)
			if !ok || len(fields) == 0 {
				continue
			}
			if fd, _ := strconv.Atoi(fields[len(fields)-1]); fd > 2 && (strings.HasPrefix(target, "socket:") || strings.HasPrefix(target, "pipe:")) {
				t.Fatalf("the child holds descriptor %d (%s) beyond its stdin, stdout and stderr:\n%s", fd, target, out)
			}
		}
	}
}

// supervisorsOf are the pids of the long-lived supervisors whose parent
// is pid (their command line is the program's, then proctree.Arg and
// proctree.ServeArg).
func supervisorsOf(t *testing.T, pid int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []int
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after its ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		if len(args) == 3 && args[1] == proctree.Arg && args[2] == proctree.ServeArg {
			found = append(found, child)
		}
	}
	return found
}

// parentOf is pid's parent pid (0 once pid is gone).
func parentOf(pid int) int {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// TestSpawnerPrestart: Prestart starts the supervisor with no child asked
// of it (before, the first Start did), once however often it is called,
// and the children started afterwards are that supervisor's: no second
// one is started. A spawner never prestarted starts none until its first
// Start.
func TestSpawnerPrestart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prestarts int
		want      int // supervisors before any Start
	}{
		{"never", 0, 0},
		{"once", 1, 1},
		{"three times", 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := testSpawner(t)
			for range tc.prestarts {
				sp.Prestart()
			}
			var sups []int
			if tc.want == 0 {
				time.Sleep(50 * time.Millisecond) // a supervisor started wrongly would show by now
				sups = supervisorsOf(t, os.Getpid())
			}
			for deadline := time.Now().Add(10 * time.Second); tc.want > 0 && len(sups) < tc.want && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
				sups = supervisorsOf(t, os.Getpid())
			}
			if len(sups) != tc.want {
				t.Fatalf("%d supervisors before any Start, want %d", len(sups), tc.want)
			}
			c := spawnSh(t, sp, "exec sleep 300")
			defer func() { _ = c.Terminate(); c.Wait() }()
			after := supervisorsOf(t, os.Getpid())
			if len(after) != 1 {
				t.Fatalf("%d supervisors after a Start, want 1", len(after))
			}
			if tc.want == 1 && after[0] != sups[0] {
				t.Fatalf("the child's supervisor is %d, not the prestarted %d", after[0], sups[0])
			}
			if got := parentOf(c.Pid); got != after[0] {
				t.Fatalf("the child's parent is %d, not the supervisor %d", got, after[0])
			}
		})
	}
}
