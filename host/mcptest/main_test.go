package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// binary builds cmd/agenthost-testserver once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "agenthost-testserver-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "agenthost-testserver")
		cmd := exec.Command("go", "build", "-o", binPath, "../../cmd/agenthost-testserver")
		var out []byte
		if out, buildErr = cmd.CombinedOutput(); buildErr != nil {
			buildErr = errors.New(buildErr.Error() + ": " + string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("building the binary: %v", buildErr)
	}
	return binPath
}

func TestBinaryStdioWithMCPGo(t *testing.T) {
	bin := binary(t)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	tr := transport.NewStdio(bin, nil, "--tools", writeToolFiles(t), "--record", record, "--stderr-noise")
	c, init := connect(t, tr, false, []string{SecureParamsExtension})
	if init.ProtocolVersion != "2026-07-28" {
		t.Errorf("negotiated %q", init.ProtocolVersion)
	}
	list, err := c.ListTools(ctxTimeout(t, 5*time.Second), mcp.ListToolsRequest{})
	if err != nil || len(list.Tools) != len(allTestToolNames) {
		t.Fatalf("tools: %d %v", len(list.Tools), err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Transport string `json:"transport"`
			Message   struct {
				Method string `json:"method"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Transport != "stdio" {
			t.Fatalf("record line %q: %v", line, err)
		}
		methods = append(methods, e.Message.Method)
	}
	if strings.Join(methods, ",") != "server/discover,tools/list" {
		t.Errorf("recorded methods %v", methods)
	}
}

func TestBinaryExitCodes(t *testing.T) {
	bin := binary(t)
	tools := writeToolFiles(t)
	call := func(name string) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": name, "_meta": ModernMeta()}})
		return string(b) + "\n"
	}
	cases := []struct {
		name  string
		args  []string
		stdin string
		code  int
	}{
		{"EOF ends cleanly", []string{"--tools", tools}, call("echo"), ExitOK},
		{"die exits 3", []string{"--tools", tools}, call("die") + call("echo"), ExitDied},
		{"die-after exits 3", []string{"--tools", tools, "--die-after", "1"}, call("echo") + call("echo"), ExitDied},
		{"bad flag exits 2", []string{"--bogus"}, "", ExitUsage},
		{"bad tools file exits 1", []string{"--tools", "missing.json"}, "", ExitError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Stdin = strings.NewReader(tc.stdin)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			err := cmd.Run()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stdout %q)", code, tc.code, stdout.String())
			}
			if tc.code == ExitDied && strings.Count(stdout.String(), "\n") > 1 {
				t.Errorf("dead server kept answering: %q", stdout.String())
			}
		})
	}
}

func TestBinaryHTTP(t *testing.T) {
	bin := binary(t)
	tools := writeToolFiles(t)
	t.Run("LISTENING line, SIGTERM exits 0", func(t *testing.T) {
		cmd := exec.Command(bin, "--transport", "http", "--tools", tools)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatal(err)
		}
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
		if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
			_ = cmd.Process.Kill()
			t.Fatalf("first line %q", line)
		}
		c, _ := mcpClient(t, "http", nil, url, true, nil)
		if _, err := c.ListTools(ctxTimeout(t, 5*time.Second), mcp.ListToolsRequest{}); err != nil {
			t.Error(err)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	})
	t.Run("addr-file, die exits 3", func(t *testing.T) {
		addrFile := filepath.Join(t.TempDir(), "addr")
		cmd := exec.Command(bin, "--transport", "http", "--tools", tools, "--addr-file", addrFile)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var url string
		waitUntil(t, "the address file", func() bool {
			data, err := os.ReadFile(addrFile)
			url = strings.TrimSpace(string(data))
			return err == nil
		})
		c, _ := mcpClient(t, "http", nil, url, false, nil)
		if _, err := callTool(ctxTimeout(t, 5*time.Second), c, "die", nil); err == nil {
			t.Error("die answered")
		}
		select {
		case err := <-done:
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != ExitDied {
				t.Errorf("exit: %v", err)
			}
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("server did not exit after die")
		}
	})
}

func TestMainInProcess(t *testing.T) {
	var stdout, stderr bytes.Buffer
	stdin, stdinWriter := io.Pipe() // an idle stdin; Main closes it when ctx ends
	defer stdinWriter.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled context (a signal) ends serving with exit code 0.
	if code := Main(ctx, []string{"--tools", writeToolFiles(t)}, stdin, &stdout, &stderr); code != ExitOK {
		t.Errorf("exit code %d, stderr %q", code, stderr.String())
	}
}
