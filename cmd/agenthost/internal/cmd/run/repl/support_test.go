package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

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
