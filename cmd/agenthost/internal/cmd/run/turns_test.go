package run

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

func TestTurnExit(t *testing.T) {
	cfgErr := &host.Event{Type: host.EventError, Kind: host.KindConfig}
	otherErr := &host.Event{Type: host.EventError, Kind: host.KindUnavailable}
	for _, tc := range []struct {
		reason  string
		lastErr *host.Event
		code    int
	}{
		{host.EndDone, nil, 0},
		{host.EndMaxSteps, nil, cmdutil.ExitMaxSteps},
		{host.EndInterrupted, nil, 130},
		{host.EndError, nil, cmdutil.ExitError},
		{host.EndError, otherErr, cmdutil.ExitError},
		{host.EndError, cfgErr, cmdutil.ExitUsage},
	} {
		err := turnExit(host.Event{Type: host.EventSessionEnd, Reason: tc.reason}, tc.lastErr)
		if cmdutil.CodeOf(err) != tc.code {
			t.Errorf("%s (last error %v): exit %d, want %d", tc.reason, tc.lastErr, cmdutil.CodeOf(err), tc.code)
		}
	}
}

func turnEvents() []host.Event {
	return []host.Event{
		{Type: host.EventAssistantDelta, Text: "Hel"},
		{Type: host.EventAssistantDelta, Text: "lo"},
		{Type: host.EventAssistant, Text: "Hello"},
		{Type: host.EventSessionEnd, Reason: host.EndDone, Steps: 1},
	}
}

// TestPrintEventsFormats: text prints the streamed text once; the
// agenthost formats print events as JSON lines (no deltas), and
// agenthost-json only the end, with "result" always present.
func TestPrintEventsFormats(t *testing.T) {
	for _, tc := range []struct {
		format outputFormat
		check  func(t *testing.T, out string)
	}{
		{formatText, func(t *testing.T, out string) {
			if out != "Hello\n" {
				t.Errorf("text: %q", out)
			}
		}},
		{formatAgentStreamJSON, func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || !strings.Contains(lines[0], `"type":"assistant"`) || !strings.Contains(lines[1], `"type":"session_end"`) {
				t.Errorf("agenthost-stream-json: %q", out)
			}
		}},
		{formatAgentJSON, func(t *testing.T, out string) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["type"] != "session_end" {
				t.Fatalf("agenthost-json: %v %q", err, out)
			}
			if r, ok := doc["result"]; !ok || r != "" {
				t.Errorf("result is always present: %q", out)
			}
		}},
		{formatJSON, func(t *testing.T, out string) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["type"] != "result" {
				t.Errorf("json: %v %q", err, out)
			}
		}},
		{formatStreamJSON, func(t *testing.T, out string) {
			if !strings.Contains(out, `"type":"result"`) || strings.Count(out, "\n") < 2 {
				t.Errorf("stream-json: %q", out)
			}
		}},
	} {
		t.Run(tc.format.String(), func(t *testing.T) {
			var out, errOut bytes.Buffer
			a := &app{f: cmdutil.New(&cmdutil.IOStreams{Out: &out, ErrOut: &errOut}), opts: &RunOptions{}}
			end, lastErr, seen := a.printEvents(slices.Values(turnEvents()), tc.format)
			if !seen || end.Reason != host.EndDone || lastErr != nil {
				t.Errorf("end %+v, last error %v, seen %t", end, lastErr, seen)
			}
			tc.check(t, out.String())
		})
	}
	var out bytes.Buffer
	a := &app{f: cmdutil.New(&cmdutil.IOStreams{Out: &out, ErrOut: &out}), opts: &RunOptions{}}
	if _, _, seen := a.printEvents(slices.Values([]host.Event(nil)), formatAgentJSON); seen || out.Len() != 0 {
		t.Errorf("no events: seen %t, printed %q", seen, out.String())
	}
}

func TestPrintJSONEvent(t *testing.T) {
	var b bytes.Buffer
	printJSONEvent(&b, host.Event{Type: host.EventAssistant, Text: "x"}, formatAgentJSON)
	if b.Len() != 0 {
		t.Errorf("agenthost-json prints only the end: %q", b.String())
	}
	printJSONEvent(&b, host.Event{Type: host.EventSessionEnd, Reason: host.EndDone}, formatAgentJSON)
	if !strings.HasSuffix(b.String(), `,"result":""}`+"\n") {
		t.Errorf("agenthost-json end: %q", b.String())
	}
	b.Reset()
	printJSONEvent(&b, host.Event{Type: host.EventAssistant, Text: "x"}, formatAgentStreamJSON)
	if !strings.Contains(b.String(), `"text":"x"`) || strings.Contains(b.String(), `"result"`) {
		t.Errorf("agenthost-stream-json: %q", b.String())
	}
	// The streamed pieces are left out of both agenthost formats
	// (docs/events.md), in the REPL as in a one-shot run.
	for _, format := range []outputFormat{formatAgentStreamJSON, formatAgentJSON} {
		b.Reset()
		printJSONEvent(&b, host.Event{Type: host.EventAssistantDelta, Text: "piece"}, format)
		if b.Len() != 0 {
			t.Errorf("%v prints a delta: %q", format, b.String())
		}
	}
	// Every JSON output carries the text as it is (docs/cli.md): <, > and
	// & are not escaped, as run's printEvents does not escape them.
	for _, format := range []outputFormat{formatAgentStreamJSON, formatAgentJSON} {
		b.Reset()
		printJSONEvent(&b, host.Event{Type: host.EventSessionEnd, Reason: host.EndDone, Result: "<b>a & b</b>"}, format)
		if !strings.Contains(b.String(), `"result":"<b>a & b</b>"`) {
			t.Errorf("%v: HTML characters escaped: %q", format, b.String())
		}
	}
}

func TestWarnAboutTools(t *testing.T) {
	for _, tc := range []struct {
		sum  host.ViewSummary
		want string
	}{
		{host.ViewSummary{}, "the model is offered no tools: no server listed any"},
		{host.ViewSummary{Active: 3}, ""},
		{host.ViewSummary{Hidden: 2, Excluded: 1, TopReason: "pinned definition changed", TopReasonCount: 2},
			"the model is offered no tools: 2 hidden, 1 excluded. Most common reason (2): pinned definition changed"},
		{host.ViewSummary{Active: 1, Hidden: 1, TopReason: "r", TopReasonCount: 1},
			"1 of 2 tools are not offered to the model (1 hidden, 0 excluded). Most common reason (1): r"},
	} {
		var errOut bytes.Buffer
		a := &app{f: cmdutil.New(&cmdutil.IOStreams{ErrOut: &errOut}), opts: &RunOptions{}}
		a.warnAboutTools(tc.sum)
		if (tc.want == "") != (errOut.Len() == 0) || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%+v: %q, want %q", tc.sum, errOut.String(), tc.want)
		}
	}
}

func TestSaving(t *testing.T) {
	for _, tc := range []struct {
		f           sessionFlags
		interactive bool
		approve     string
		want        bool
	}{
		{sessionFlags{}, false, "", false},
		{sessionFlags{}, true, "", true},
		{sessionFlags{save: true}, false, "", true},
		{sessionFlags{resume: "s"}, false, "", true},
		{sessionFlags{cont: true}, false, "", true},
		{sessionFlags{}, false, "wait", true},
		{sessionFlags{noSave: true}, true, "wait", false},
	} {
		if got := tc.f.saved().Saves(tc.interactive, approvals.AnswerMode(tc.approve)); got != tc.want {
			t.Errorf("%+v interactive %t approve %q: %t, want %t", tc.f, tc.interactive, tc.approve, got, tc.want)
		}
	}
}

func TestProgressTextAndFirstLine(t *testing.T) {
	three, ten := 3.0, 10.0
	for _, tc := range []struct {
		e    host.Event
		want string
	}{
		{host.Event{Progress: &three}, "3"},
		{host.Event{Progress: &three, Total: &ten, Text: "copying"}, "3/10 copying"},
		{host.Event{Text: "just a message"}, "just a message"},
		{host.Event{Text: strings.Repeat("x", 100)}, strings.Repeat("x", 80) + "…"},
	} {
		if got := progressText(tc.e); got != tc.want {
			t.Errorf("progressText = %q, want %q", got, tc.want)
		}
	}
	if got := firstLine("one\ntwo\nthree", 10); got != "one … (3 lines)" {
		t.Errorf("firstLine = %q", got)
	}
	if got := firstLine("only", 10); got != "only" {
		t.Errorf("firstLine = %q", got)
	}
	if editorPlaceholder("dumb") != "" || editorPlaceholder("xterm-256color") == "" {
		t.Error("the placeholder is drawn only where it can be faint")
	}
}

// TestLocalAlways: "always" is saved beside the config, listed, reused and
// removed by number or rule id; with no config file it is not offered.
func TestLocalAlways(t *testing.T) {
	none := newLocalAlways(&config.Config{})
	if none.a.Offered() || !strings.Contains(none.list(), "no config file") || none.remove("1") != "no local settings file\n" {
		t.Errorf("no config file: %+v", none)
	}
	cfgFile := filepath.Join(t.TempDir(), "agenthost.yaml")
	if err := os.WriteFile(cfgFile, []byte("mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	la := newLocalAlways(&config.Config{File: cfgFile})
	if !strings.HasPrefix(la.list(), `no answers "always" saved`) {
		t.Errorf("empty list: %q", la.list())
	}
	msg, err := la.always(&approvals.Request{Server: "shop", Tool: "delete"})
	if err != nil || !strings.HasPrefix(msg, "allowed always: rule ") {
		t.Fatalf("always: %q, %v", msg, err)
	}
	if !strings.Contains(la.list(), "  1. shop/delete  rule ") {
		t.Errorf("list: %q", la.list())
	}
	if note := la.reused(host.Event{Server: "shop", Tool: "delete", Decision: "allow"}); !strings.Contains(note, `your earlier answer "always"`) {
		t.Errorf("reused: %q", note)
	}
	if note := la.reused(host.Event{Server: "shop", Tool: "other", Outcome: string(rules.OutcomeGranted)}); !strings.Contains(note, "for this session") {
		t.Errorf("a session grant: %q", note)
	}
	if note := la.reused(host.Event{Server: "shop", Tool: "other", Decision: "allow"}); note != "" {
		t.Errorf("no earlier answer: %q", note)
	}
	if got := la.remove("2"); got != "no answer 2 (/approvals lists them)\n" {
		t.Errorf("remove 2: %q", got)
	}
	if got := la.remove("nope"); got != "no answer \"nope\" (/approvals lists them)\n" {
		t.Errorf("remove nope: %q", got)
	}
	if got := la.remove("1"); !strings.HasPrefix(got, "removed rule ") {
		t.Errorf("remove 1: %q", got)
	}
	if _, err := os.Stat(config.LocalPath(cfgFile)); err != nil {
		t.Errorf("the local settings file: %v", err)
	}
}

func TestHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "history")
	h := loadHistory(path)
	h.add("first")
	h.add("second")
	h.add("second") // a repeat is kept once
	h.add(strings.Repeat("x", maxHistoryEntry+1))
	if len(h.entries) != 2 {
		t.Fatalf("entries %q", h.entries)
	}
	if s, ok := h.prev("draft"); !ok || s != "second" {
		t.Errorf("prev: %q", s)
	}
	if s, ok := h.prev(""); !ok || s != "first" {
		t.Errorf("prev: %q", s)
	}
	if _, ok := h.prev(""); ok {
		t.Error("prev past the first entry")
	}
	if s, _ := h.next(); s != "second" {
		t.Errorf("next: %q", s)
	}
	if s, _ := h.next(); s != "draft" {
		t.Errorf("next back to the draft: %q", s)
	}
	if _, ok := h.next(); ok {
		t.Error("next past the draft")
	}
	again := loadHistory(path)
	if len(again.entries) != 2 || again.entries[0] != "first" {
		t.Errorf("reloaded: %q", again.entries)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the history file: %v", err)
	}
	if loadHistory("").path != "" {
		t.Error("no path")
	}
}

func TestHistoryPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/srv/state")
	if got := historyPath(); got != filepath.Join("/srv/state", "agenthost", "history") {
		t.Errorf("historyPath = %q", got)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/srv/home")
	if got := historyPath(); got != filepath.Join("/srv/home", ".local", "state", "agenthost", "history") {
		t.Errorf("historyPath = %q", got)
	}
}
