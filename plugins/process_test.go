//go:build linux

package plugins_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins"
)

// sleeperScript is a cred-exec command that records its pid and then
// sleeps in place (exec keeps the pid), never answering.
func sleeperScript(t *testing.T, pidfile string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "sleeper.sh")
	body := fmt.Sprintf("#!/bin/sh\necho $$ > %s.tmp && mv %s.tmp %s\nexec sleep 60\n", pidfile, pidfile, pidfile)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func TestCloseKillsCredExecCommand(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "cmd-pid")
	h := newHarness(t, bin.credExec, func(o *plugins.Options) {
		o.Config = map[string]any{"command": []any{sleeperScript(t, pidfile)}, "timeout": "1m"}
	})
	done := make(chan error, 1)
	go func() {
		_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "any"})
		done <- err
	}()
	cmdPid := readPid(t, pidfile)
	if !alive(cmdPid) {
		t.Fatal("command not running")
	}
	if err := h.src.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "cred-exec command", cmdPid)
	select {
	case err := <-done:
		if !errors.Is(err, plugins.ErrClosed) {
			t.Errorf("in-flight Resolve = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight Resolve did not return after Close")
	}
}

// TestHostKilledLeavesNoPlugin SIGKILLs a host process (testhost) and
// checks that the plugin it started, and the plugin's command, die too.
func TestHostKilledLeavesNoPlugin(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the plugin, its args and config, the ref to resolve,
		// and pid files of the processes that must die with the host.
		setup func(t *testing.T, dir string) (path string, args []string, config map[string]any, ref string, pidfiles []string)
	}{
		{"testplugin", func(t *testing.T, dir string) (string, []string, map[string]any, string, []string) {
			pid := filepath.Join(dir, "plugin-pid")
			return bin.testPlugin, []string{"-pidfile", pid, "-ignore-sigpipe"}, nil, "slow", []string{pid}
		}},
		{"cred-exec with a sleeping command", func(t *testing.T, dir string) (string, []string, map[string]any, string, []string) {
			pid := filepath.Join(dir, "cmd-pid")
			cfg := map[string]any{"command": []any{sleeperScript(t, pid)}, "timeout": "1m"}
			return bin.credExec, nil, cfg, "any", []string{pid}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, args, config, ref, pidfiles := tt.setup(t, dir)
			cfg, err := json.Marshal(config)
			if err != nil {
				t.Fatal(err)
			}
			ready := filepath.Join(dir, "ready")
			hostArgs := []string{"-plugin", path, "-checksum", hex.EncodeToString(checksum(t, path)),
				"-config", string(cfg), "-ref", ref, "-ready", ready}
			for _, a := range args {
				hostArgs = append(hostArgs, "-arg", a)
			}
			host := exec.Command(bin.testHost, hostArgs...)
			host.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + shortTempDir(t)}
			host.Stderr = os.Stderr
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
			waitForFile(t, ready)
			var pids []int
			for _, f := range pidfiles {
				pids = append(pids, readPid(t, f))
			}
			plugin := childrenOf(t, host.Process.Pid)
			if len(plugin) != 1 {
				t.Fatalf("host has children %v, want exactly the plugin", plugin)
			}
			pids = append(pids, plugin...)
			if err := host.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = host.Wait()
			for _, pid := range pids {
				waitGone(t, "process started for the killed host", pid)
			}
		})
	}
}

// childrenOf lists the live child processes of pid, from /proc.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && alive(p) {
			kids = append(kids, p)
		}
	}
	return kids
}
