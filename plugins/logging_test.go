package plugins

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

func TestValueRedactor(t *testing.T) {
	r := newValueRedactor()
	r.Add("abc") // too short to mask
	r.Add("token-123")
	r.Add("token-123-extended")
	tests := []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"abc stays", "abc stays"},
		{"got token-123!", "got [REDACTED]!"},
		{"got token-123-extended", "got [REDACTED]"}, // longest first: no "-extended" tail
		{"token-123token-123", "[REDACTED][REDACTED]"},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLogGateHoldsLinesUntilCallsEnd(t *testing.T) {
	var out bytes.Buffer
	red := newValueRedactor()
	gate := newLogGate(red)
	log := newRedactingLogger(hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace}), gate)

	log.Info("before any call")
	if !strings.Contains(out.String(), "before any call") {
		t.Fatal("a line with no call in flight was held")
	}

	first := gate.begin()
	log.Info("during first", "value", "secret-one")
	second := gate.begin()
	log.Info("during both", "value", "secret-two")
	if strings.Contains(out.String(), "during") {
		t.Fatalf("lines written while calls were in flight:\n%s", out.String())
	}

	red.Add("secret-one")
	gate.end(first)
	if !strings.Contains(out.String(), "during first: value=[REDACTED]") {
		t.Errorf("line from the first call not released (masked) when it ended:\n%s", out.String())
	}
	if strings.Contains(out.String(), "during both") {
		t.Error("line that arrived during the second call released before it ended")
	}

	red.Add("secret-two")
	gate.end(second)
	got := out.String()
	if strings.Contains(got, "secret-") {
		t.Errorf("a value leaked:\n%s", got)
	}
	if !strings.Contains(got, "during both: value=[REDACTED]") {
		t.Errorf("second line missing:\n%s", got)
	}
	if strings.Index(got, "during first") > strings.Index(got, "during both") {
		t.Errorf("lines out of order:\n%s", got)
	}
}

func TestLogGateDropsOldestWhenFull(t *testing.T) {
	var out bytes.Buffer
	gate := newLogGate(newValueRedactor())
	dropped := 0
	gate.notice = func(n int) { dropped = n }
	log := newRedactingLogger(hclog.New(&hclog.LoggerOptions{Output: &out}), gate)
	ticket := gate.begin()
	for range maxHeldLines + 5 {
		log.Info("line")
	}
	gate.end(ticket)
	if dropped != 5 {
		t.Errorf("dropped = %d, want 5", dropped)
	}
	if n := strings.Count(out.String(), "line"); n != maxHeldLines {
		t.Errorf("%d lines written, want %d", n, maxHeldLines)
	}
}

func TestRedactArgs(t *testing.T) {
	red := newValueRedactor()
	red.Add("hunter22")
	got := redactArgs(red, []any{
		"k1", "pw=hunter22",
		"k2", errors.New("failed with hunter22"),
		"k3", []byte("hunter22"),
		"k4", 42,
		"k5", struct{ S string }{"hunter22"},
	})
	want := []any{
		"k1", "pw=[REDACTED]",
		"k2", "failed with [REDACTED]",
		"k3", "[REDACTED]",
		"k4", 42,
		"k5", "{S:[REDACTED]}",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("redactArgs (-want +got):\n%s", diff)
	}
}

func TestLineWriter(t *testing.T) {
	var lines []string
	w := &lineWriter{line: func(s string) { lines = append(lines, s) }}
	long := strings.Repeat("x", maxLineLen+1)
	for _, chunk := range []string{"one\ntw", "o\r\n", long[:10], long[10:], "\nthree", "\n", "tail"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()
	want := []string{"one", "two", "(a 16385-byte line was withheld: longer than 16384 bytes)", "three", "tail"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		line      string
		wantLevel hclog.Level
		wantMsg   string
		wantArgs  []any
	}{
		{`{"@level":"warn","@message":"hi","@timestamp":"x","@module":"p","n":3,"s":"v"}`, hclog.Warn, "hi", []any{"n", "3", "s", "v"}},
		{`{"@level":"bogus","@message":"m"}`, hclog.Debug, "m", []any{}},
		{"[ERROR] plain failure", hclog.Error, "[ERROR] plain failure", nil},
		{"panic: boom", hclog.Error, "panic: boom", nil},
		{"just text", hclog.Debug, "just text", nil},
		{"{not json", hclog.Debug, "{not json", nil},
	}
	for _, tt := range tests {
		level, msg, args := parseLogLine(tt.line)
		if level != tt.wantLevel || msg != tt.wantMsg {
			t.Errorf("parseLogLine(%q) = %v %q, want %v %q", tt.line, level, msg, tt.wantLevel, tt.wantMsg)
		}
		if diff := cmp.Diff(tt.wantArgs, args); diff != "" {
			t.Errorf("parseLogLine(%q) args (-want +got):\n%s", tt.line, diff)
		}
	}
}

func TestStderrTailKeepsLastLinesRedacted(t *testing.T) {
	var tail stderrTail
	for i := range tailLines + 3 {
		tail.add(strings.Repeat("a", i%2) + "line")
	}
	tail.add("the password is opensesame")
	tail.add(strings.Repeat("z", tailLineLen+50))
	red := newValueRedactor()
	red.Add("opensesame")
	got := tail.redacted(red)
	if len(got) != tailLines {
		t.Fatalf("%d lines, want %d", len(got), tailLines)
	}
	if got[tailLines-2] != "the password is [REDACTED]" {
		t.Errorf("value not masked: %q", got[tailLines-2])
	}
	if last := got[tailLines-1]; len(last) != tailLineLen+len("...(truncated)") {
		t.Errorf("long line not capped: %d bytes", len(last))
	}
}
