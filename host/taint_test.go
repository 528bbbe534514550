package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/taint"
	"github.com/agenthost/agenthost/host/mcptest"
)

// TestToolsHoldingProtectedValuesAreExcluded: a definition whose name,
// description or inputSchema (a default, an enum member, in any JSON
// spelling) holds a protected value is excluded from every view as soon as
// the host knows the value, with a reason naming none; calls to it are
// refused; the report masks it; and the check is not redone per view or
// per call.
func TestToolsHoldingProtectedValuesAreExcluded(t *testing.T) {
	const slashed = "tok/en/SLASH-1"
	pyEscaped := strings.ReplaceAll(canary, "-", `\u002d`)
	tools := `[
	 {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
	  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}}, "required": ["instance"]}},
	 {"name": "described", "description": "Runs on instance ` + canary + `.", "inputSchema": {"type": "object"}},
	 {"name": "titled", "title": "On ` + pyEscaped + `", "inputSchema": {"type": "object"}},
	 {"name": "enum_py", "inputSchema": {"type": "object", "properties": {"i": {"enum": ["` + pyEscaped + `", "b"]}}}},
	 {"name": "default_php", "inputSchema": {"type": "object", "properties": {"i": {"type": "string", "default": "tok\/en\/SLASH-1"}}}},
	 {"name": "x_` + canary + `", "inputSchema": {"type": "object"}},
	 {"name": "plain", "description": "Nothing to see.", "inputSchema": {"type": "object"}}
	]`
	h, _, _ := testHost(t, "", mcptest.Options{ToolsJSON: []byte(tools)})
	ctx := context.Background()
	h.Connect(ctx)
	tainted := []string{"described", "titled", "enum_py", "x_" + canary}

	// Before the host knows the value, nothing marks these tools.
	before := h.NewSession(SessionOptions{}).View(ctx)
	for _, name := range append(tainted, "default_php", "plain") {
		if got := status(before, name); got != ToolActive {
			t.Fatalf("%s is %s before any value is known", name, got)
		}
	}
	// A session with the (secret) session value: the host protects it
	// from the start, before any call resolves it.
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": canary}})
	after := s.View(ctx)
	for _, name := range tainted {
		if got := status(after, name); got != ToolExcluded {
			t.Errorf("%s is %s, want excluded", name, got)
		}
	}
	for _, name := range []string{"execute_sql", "default_php", "plain"} {
		if got := status(after, name); got != ToolActive {
			t.Errorf("%s is %s, want active", name, got)
		}
	}
	if _, err := s.CallTool(ctx, "db", "execute_sql", json.RawMessage(`{"query":"x"}`)); err != nil {
		t.Fatal(err)
	}
	// A value learned later (here: resolved elsewhere) is checked too.
	h.redactor.Add(slashed)
	later := s.View(ctx)
	if got := status(later, "default_php"); got != ToolExcluded {
		t.Errorf("default_php is %s after its value became protected", got)
	}
	for _, tv := range later.Tools["db"] {
		if tv.Status == ToolExcluded && tv.Reason != taint.Reason {
			t.Errorf("%s: reason %q", tv.Tool.Name, tv.Reason)
		}
	}
	modelTools, _ := json.Marshal(later.Model.Tools())
	if len(later.Model.Tools()) != 2 || h.redactor.ContainsSecret(string(modelTools)) {
		t.Errorf("the model view: %s", modelTools)
	}
	report, _ := json.Marshal(s.Report(ctx, ""))
	if strings.Contains(string(report), canary) || h.redactor.ContainsSecret(string(report)) {
		t.Errorf("the report shows a protected value: %s", report)
	}
	for _, name := range []string{"described", "default_php"} {
		_, err := s.CallTool(ctx, "db", name, nil)
		if !errors.Is(err, ErrToolUnavailable) || KindOf(err) != KindUnavailable {
			t.Errorf("call to %s: %v, want unavailable", name, err)
		}
	}

	// Unchanged: the view and the check are reused, calls do not redo it.
	check := h.taint.Current("db")
	if again := s.View(ctx); again != later {
		t.Error("an unchanged catalog rebuilt the view")
	}
	if _, err := s.CallTool(ctx, "db", "plain", nil); err != nil {
		t.Fatal(err)
	}
	if h.taint.Current("db") != check {
		t.Error("a call re-ran the check of the catalog")
	}
	// Sessions share the verdicts.
	other := h.NewSession(SessionOptions{Values: map[string]string{"instance": "another"}})
	if got := status(other.View(ctx), "described"); got != ToolExcluded {
		t.Errorf("another session sees described as %s", got)
	}
}
