//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChildrenOfChildrenDieWithHost: a stdio server, or a credential
// plugin's command, that starts a process of its own (sh -c 'sleep 300 &
// ...') leaves nothing behind, whether agenthost exits normally or is
// SIGKILLed; nor does a hook whose child calls setsid (and, on a normal
// exit, is left running when the hook exits). The test never kills agenthost's process group itself, so
// nothing but agenthost (and its supervisor) can end the grandchild.
func TestChildrenOfChildrenDieWithHost(t *testing.T) {
	t.Parallel()
	for _, owner := range []string{"stdio server", "plugin", "hook"} {
		for _, kill := range []bool{false, true} {
			name := owner + "/normal exit"
			if kill {
				name = owner + "/host SIGKILLed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				orphanRun(t, owner, kill)
			})
		}
	}
}

// orphanRun runs one call through agenthost whose server (or plugin
// command, or PreToolUse hook) has started a background sleep, ends
// agenthost normally or by SIGKILL, and waits for the sleep to be gone.
func orphanRun(t *testing.T, owner string, kill bool) {
	plugin := owner == "plugin"
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "grandchild.pid")
	record := filepath.Join(dir, "record.jsonl")
	// The background sleep writes its pid and keeps no pipe of its parent.
	spawnSleep := fmt.Sprintf(`sleep 300 >/dev/null 2>&1 </dev/null & echo $! > %q.tmp && mv %q.tmp %q`, pidfile, pidfile, pidfile)
	tools := writeJSON(t, dir, "tools.json", []obj{
		ftPlainTool("stall", obj{"hang": true}),
		ftPlainTool("fine", obj{"text": "fine answered"}),
		ftSecureTool("secure", obj{"text": "secure answered"}, "token"),
	})
	cfg := obj{}
	tool := "fine"
	switch {
	case owner == "hook":
		if _, err := exec.LookPath("setsid"); err != nil {
			t.Skip("no setsid program (util-linux)")
		}
		// The sleep leads a session of its own; on a normal exit the hook
		// leaves it running, orphaned.
		answer := `echo '{}'`
		if kill {
			answer = "exec sleep 60" // the call waits for the hook
		}
		script := ftScript(t, dir, "hook.sh", "setsid "+spawnSleep+"\n"+answer+"\n")
		cfg["mcpServers"] = obj{"srv": stdioServer(tools, record)}
		cfg["hooks"] = obj{"PreToolUse": []obj{{"matcher": "mcp__srv__.*", "hooks": []obj{{"type": "command", "command": script}}}}}
	case plugin:
		tool = "secure"
		answer := `echo '{"Version": 1, "Value": "plugin-token"}'`
		if kill {
			answer = "exec sleep 60" // the call hangs in the plugin
		}
		script := ftScript(t, dir, "cred.sh", spawnSleep+"\n"+answer+"\n")
		cfg["mcpServers"] = obj{"srv": stdioServer(tools, record)}
		cfg["sources"] = obj{"vault": ftPluginSource(t, ftBins(t).credExec, obj{"command": []string{script}, "timeout": "1m"})}
		cfg["bindings"] = []obj{{"server": "srv", "params": obj{"token": obj{"source": "vault", "ref": "orders/token"}}}}
	default:
		if kill {
			tool = "stall"
		}
		script := fmt.Sprintf(`%s; exec %q --tools %q --record %q`, spawnSleep, testServerBin, tools, record)
		cfg["mcpServers"] = obj{"srv": obj{"command": "/bin/sh", "args": []string{"-c", script}, "callTimeout": "60s"}}
	}
	cmd := exec.Command(agenthostBin, "--config", writeConfig(t, cfg), "call", "srv", tool, "--args", `{"n":1}`, "--json")
	cmd.Dir = dir
	cmd.Env = baseEnv(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A group of its own, but never killed as a group here: only agenthost
	// may clean up after its children.
	inOwnProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	pid := waitPidfile(t, pidfile, exited)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if kill {
		if owner == "stdio server" {
			// The call is in flight once the server has recorded it.
			waitFor(t, 20*time.Second, "the server to receive the call", func() bool {
				b, _ := os.ReadFile(record)
				return bytes.Contains(b, []byte(`"tools/call"`))
			})
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-exited:
		exited <- err
		if !kill && err != nil {
			t.Fatalf("agenthost: %v\nstdout: %s\nstderr: %s", err, &stdout, &stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agenthost did not exit\nstderr: %s", &stderr)
	}
	if !kill && !strings.Contains(stdout.String(), "answered") {
		t.Fatalf("call output:\n%s\nstderr: %s", &stdout, &stderr)
	}
	deadline := time.Now().Add(15 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the background process (pid %d) outlived agenthost by 15s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPidfile waits for the pid the server's shell wrote, failing early
// if agenthost exits first.
func waitPidfile(t *testing.T, path string, exited chan error) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
			if err != nil {
				t.Fatalf("pid file: %v", err)
			}
			return pid
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("agenthost exited (%v) before the server started its child", err)
		case <-ctx.Done():
			t.Fatal("the server's child never wrote its pid")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// processAlive reports whether pid is a live (non-zombie) process.
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestSupervisorSkipsTheCLIInitializers: agenthost started as a supervisor
// (once per hook call and stdio server) runs its child before the CLI's
// heavy packages initialize (package internal/childproc/supervisor, which
// imports only os and internal/childproc/proctree): the JSON Schema
// compiler's initializer alone took several milliseconds on every hook
// call, the 200 initializers Go ran before childproc's os/exec another 9 ms
// of CPU.
func TestSupervisorSkipsTheCLIInitializers(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(agenthostBin, "__agenthost-supervise", "0", "/bin/sh", "sh", "-c", "exit 7")
	cmd.Env = append(baseEnv(t), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("supervisor: %v, want exit status 7\n%s", err, &stderr)
	}
	if !strings.Contains(stderr.String(), "init runtime @") {
		t.Fatalf("no init trace (GODEBUG=inittrace=1 ignored?):\n%s", &stderr)
	}
	heavy := []string{
		"github.com/santhosh-tekuri/jsonschema", "github.com/agenthost/agenthost/host",
		"google.golang.org/protobuf/reflect/protodesc", "github.com/google/cel-go/common/stdlib", "go.opentelemetry.io/",
		"github.com/dbos-inc/", "github.com/elastic/go-seccomp-bpf", "encoding/json",
	}
	for _, pkg := range heavy {
		if strings.Contains(stderr.String(), "init "+pkg) {
			t.Errorf("the supervisor initialized %s before it ran its child", pkg)
		}
	}
	// Only the standard library's own early packages (and the few module
	// packages as small, which Go's order puts before them): about 25, not
	// the CLI's 200 (docs/PERFORMANCE.md, "The supervisor").
	if n := strings.Count(stderr.String(), "\ninit "); n > 40 {
		t.Errorf("the supervisor ran %d package initializers before its child, want at most 40:\n%s", n, &stderr)
	}
}
