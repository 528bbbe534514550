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
// SIGKILLed. The test never kills agenthost's process group itself, so
// nothing but agenthost (and its supervisor) can end the grandchild.
func TestChildrenOfChildrenDieWithHost(t *testing.T) {
	t.Parallel()
	for _, owner := range []string{"stdio server", "plugin"} {
		for _, kill := range []bool{false, true} {
			name := owner + "/normal exit"
			if kill {
				name = owner + "/host SIGKILLed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				orphanRun(t, owner == "plugin", kill)
			})
		}
	}
}

// orphanRun runs one call through agenthost whose server (or plugin
// command) has started a background sleep, ends agenthost normally or by
// SIGKILL, and waits for the sleep to be gone.
func orphanRun(t *testing.T, plugin, kill bool) {
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
	if plugin {
		tool = "secure"
		answer := `echo '{"Version": 1, "Value": "plugin-token"}'`
		if kill {
			answer = "exec sleep 60" // the call hangs in the plugin
		}
		script := ftScript(t, dir, "cred.sh", spawnSleep+"\n"+answer+"\n")
		cfg["mcpServers"] = obj{"srv": stdioServer(tools, record)}
		cfg["sources"] = obj{"vault": ftPluginSource(t, ftBins(t).credExec, obj{"command": []string{script}, "timeout": "1m"})}
		cfg["bindings"] = []obj{{"server": "srv", "params": obj{"token": obj{"source": "vault", "ref": "orders/token"}}}}
	} else {
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
		if !plugin {
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
