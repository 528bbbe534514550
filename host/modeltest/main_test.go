package modeltest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/internal/syncbuf"
)

// lockedBuffer is a buffer safe to read while others write to it.
type lockedBuffer = syncbuf.Buffer

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runMain starts Main and returns the announced URL, a stop function that
// returns the exit code, and stderr.
func runMain(t *testing.T, args ...string) (url string, stop func() int, stderr *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdoutR, stdoutW := io.Pipe()
	stderr = &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, args, stdoutW, stderr)
		stdoutW.Close()
	}()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("reading the LISTENING line: %v (exit %d, stderr %s)", err, <-code, stderr)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTENING ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("first stdout line = %q, want LISTENING http://127.0.0.1:PORT/v1", line)
	}
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	var once sync.Once
	var exit int
	stop = func() int {
		once.Do(func() { cancel(); exit = <-code })
		return exit
	}
	t.Cleanup(func() { stop() })
	return url, stop, stderr
}

func TestMainServesScriptAndRecords(t *testing.T) {
	script := writeFile(t, "script.json", `[{"toolCalls":[{"name":"s__t","arguments":"{}","id":"c1"}]},{"text":"done","expect":{"lastToolResultContains":"42"}}]`)
	dir := t.TempDir()
	record, addrFile := filepath.Join(dir, "record.jsonl"), filepath.Join(dir, "addr")
	url, stop, stderr := runMain(t, "--script", script, "--addr", "127.0.0.1:0", "--record", record, "--addr-file", addrFile, "--api-key", "sk-main")

	if got, err := os.ReadFile(addrFile); err != nil || strings.TrimSpace(string(got)) != url {
		t.Errorf("addr file = %q, %v; want %q", got, err, url)
	}
	client := newClient(url, "sk-main")
	req := userRequest("hi")
	resp, err := client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, resp.Choices[0].Message, openaiToolMessage("c1", "the answer is 42"))
	stream, err := client.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readStream(t, stream); got.message.Content != "done" {
		t.Errorf("second answer = %q, want done", got.message.Content)
	}

	// The record file is complete while the server still runs.
	rec, err := ReadRecording(record)
	if err != nil || len(rec) != 2 {
		t.Fatalf("recording = %d entries, %v; want 2", len(rec), err)
	}
	if msgs := rec.MessagesOf(1); len(msgs) != 3 || msgs[2].ToolCallID != "c1" {
		t.Errorf("recorded messages of request 1 = %+v", msgs)
	}
	if code := stop(); code != ExitOK {
		t.Errorf("exit = %d, want %d (stderr %s)", code, ExitOK, stderr)
	}
}

func TestMainReportsFailures(t *testing.T) {
	script := writeFile(t, "script.json", `[{"text":"one"}]`)
	url, stop, stderr := runMain(t, "--script", script)
	client := newClient(url, "")
	for range 2 {
		if _, err := client.CreateChatCompletion(context.Background(), userRequest("hi")); err != nil {
			t.Fatal(err)
		}
	}
	if code := stop(); code != ExitFailures {
		t.Errorf("exit = %d, want %d", code, ExitFailures)
	}
	if !strings.Contains(stderr.String(), "FAILURE: request 1: script exhausted") {
		t.Errorf("stderr = %q, want the failure logged", stderr)
	}
}

func TestMainUsageErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, "good.json", `[]`)
	bad := writeFile(t, "bad.json", `[{"text":"a"},{"status":99}]`)
	tests := []struct {
		name   string
		args   []string
		want   int
		stderr string
	}{
		{"help", []string{"-h"}, ExitOK, "-script"},
		{"no script", nil, ExitUsage, "usage: fakellm --script FILE"},
		{"stray argument", []string{"--script", good, "extra"}, ExitUsage, "usage:"},
		{"unknown flag", []string{"--scrpit", good}, ExitUsage, "flag provided but not defined"},
		{"missing script", []string{"--script", filepath.Join(dir, "nope.json")}, ExitUsage, "reading script"},
		{"invalid script", []string{"--script", bad}, ExitUsage, "step 1: status 99"},
		{"bad address", []string{"--script", good, "--addr", "127.0.0.1:notaport"}, ExitError, "listening"},
		{"unwritable record", []string{"--script", good, "--record", filepath.Join(dir, "no", "such", "dir")}, ExitError, "record file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(context.Background(), tt.args, &stdout, &stderr); code != tt.want {
				t.Errorf("exit = %d, want %d (stderr %s)", code, tt.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.stderr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing before listening", stdout.String())
			}
		})
	}
}
