//go:build unix

// The approval prompt is driven through a pseudo-terminal, hence unix.

package e2e

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/host/modeltest"
)

// rtRisk is SEP-2793 risk metadata for tool annotations and catalogue
// entries.
func rtRisk(category, risk, blast, reversibility, approval string) obj {
	return obj{"category": category, "riskLevel": risk, "blastRadius": blast, "reversibility": reversibility,
		"approvalRecommendation": approval, "minTrustLevel": 1}
}

// rtShop is a test server whose tools declare their risk (trusted), plus
// one classified by the approvals catalogue instead, under the example
// rules of docs/config.md: reads allowed, deletes asked, organization-wide
// or global changes denied.
type rtShop struct {
	cfg         string
	record      string
	tenantName  string
	tenantValue string
}

func rtNewShop(t *testing.T, model *rtModel) rtShop {
	t.Helper()
	s := rtShop{tenantName: rtName(t, "tenant_key"), tenantValue: newCanary(t, "tenant")}
	dir := t.TempDir()
	s.record = filepath.Join(dir, "record.jsonl")
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "get_order", "inputSchema": rtQueryInput, "annotations": rtRisk("read", "low", "item", "auto", "none"),
			"x-test": obj{"text": "order 7"}},
		{"name": "delete_order", "inputSchema": rtQueryInput, "annotations": rtRisk("delete", "high", "item", "manual", "single"),
			"secureInputSchema": secureSchema([]string{s.tenantName}, s.tenantName), "x-test": obj{"text": "order deleted"}},
		{"name": "purge_tenant", "inputSchema": obj{"type": "object", "properties": obj{"organization": obj{"type": "string"}}},
			"annotations": rtRisk("destroy", "high", "namespace", "none", "single"), "x-test": obj{"text": "purged"}},
		// Declares itself harmless; the operator's catalogue knows better.
		{"name": "drop_cluster", "inputSchema": obj{"type": "object"}, "annotations": rtRisk("read", "low", "item", "auto", "none"),
			"x-test": obj{"text": "dropped"}},
		{"name": "nuke_world", "inputSchema": obj{"type": "object"}, "annotations": rtRisk("destroy", "critical", "global", "none", "multi"),
			"x-test": obj{"text": "nuked"}},
	})
	entry := stdioServer(tools, s.record)
	entry["trustAnnotations"] = true
	cfg := obj{
		"mcpServers": obj{"shop": entry},
		"bindings":   []obj{{"server": "shop", "params": obj{s.tenantName: obj{"value": s.tenantValue}}}},
		"approvals": obj{
			"catalogue": []obj{{"server": "shop", "tool": "drop_*", "metadata": rtRisk("delete", "high", "cluster", "none", "multi")}},
			"rules": []obj{
				{"id": "reads", "when": obj{"category": []string{"read", "observe"}}, "decide": "allow"},
				{"id": "deletes", "when": obj{"category": []string{"delete", "destroy"}}, "decide": "ask", "approvers": 1},
				{"id": "wide", "when": obj{"blastRadius": []string{"organization", "global"}}, "decide": "deny",
					"message": "organization-wide changes are not allowed from agents"},
			},
			"noMatch": "ask",
		},
	}
	if model != nil {
		cfg["llm"] = model.llm()
	}
	s.cfg = writeConfig(t, cfg)
	return s
}

// executed lists the tools the server actually ran.
func (s rtShop) executed(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, r := range withMethod(readRecord(t, s.record), "tools/call") {
		out = append(out, jsonField[string](t, r.rpc().Params, "name"))
	}
	return out
}

// TestRtApprovalsNonInteractive runs the approval workflow through `run`
// with --approve deny and --approve auto.
func TestRtApprovalsNonInteractive(t *testing.T) {
	t.Parallel()

	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, modeltest.Script{
			rtCalls(
				rtCall("c1", "shop__get_order", obj{"query": "7"}),
				rtCall("c2", "shop__delete_order", obj{"query": "7"}),
				// organization "*" widens the blast radius to global at call time.
				rtCall("c3", "shop__purge_tenant", obj{"organization": "*"}),
			),
			// Hidden from the model (denied whatever the arguments); it calls it anyway.
			rtCalls(rtCall("c4", "shop__nuke_world", obj{})),
			rtText("Done."),
		})
		s := rtNewShop(t, model)
		r := run(t, nil, "--config", s.cfg, "run", "clean up", "--output-format", "agenthost-stream-json", "--approve", "deny")
		wantCode(t, r, 0)
		wantNoCanary(t, r, s.tenantValue)
		events := rtEvents(t, r)
		rtEnd(t, events, "done", 3)
		rtWantCall(t, events, "c1", "shop", "get_order", "auto_allowed", false)
		rtWantCall(t, events, "c2", "shop", "delete_order", "rejected", true)
		rtWantCall(t, events, "c3", "shop", "purge_tenant", "denied_by_rule", true)
		for id, decision := range map[string]string{"c1": "allow", "c2": "ask", "c3": "deny"} {
			if a := rtOfType(rtOfCall(events, id), "approval"); len(a) == 1 && a[0].Decision != decision {
				t.Errorf("call %s: approval decision %q, want %q", id, a[0].Decision, decision)
			}
		}
		if res := rtOfType(rtOfCall(events, "c4"), "tool_result"); len(res) != 1 || res[0].IsError == nil || !*res[0].IsError {
			t.Errorf("the call of the hidden tool did not come back as an error: %v", res)
		}
		for _, e := range rtOfType(rtOfCall(events, "c4"), "approval") {
			if e.Outcome != "denied_by_rule" {
				t.Errorf("the hidden tool's approval: %s", e.raw)
			}
		}

		if got := s.executed(t); !slices.Equal(got, []string{"get_order"}) {
			t.Errorf("the server ran %v, want only get_order", got)
		}
		rec := model.wantNoFailures(t)
		if len(rec) != 3 {
			t.Fatalf("model got %d requests, want 3", len(rec))
		}
		if strings.Contains(string(rec.ToolsOf(0)), "nuke_world") {
			t.Errorf("the model was offered nuke_world, which every call of is denied")
		}
		for _, id := range []string{"c2", "c3"} {
			if told := rtToolMessages(rec.MessagesOf(1))[id]; strings.TrimSpace(told) == "" {
				t.Errorf("the model was not told why %s did not run", id)
			}
		}
		rtWantNoText(t, "the model requests", rec.AllText(), s.tenantName, s.tenantValue)

		auditPath := rtAuditPath(s.cfg)
		recs := rtReadAudit(t, auditPath)
		byCall := rtAuditByCall(t, recs)
		rtWantAudit(t, byCall, "c1", "get_order", "allow", "auto_allowed", "ok")
		deleted := rtWantAudit(t, byCall, "c2", "delete_order", "ask", "rejected", "not_executed")
		purged := rtWantAudit(t, byCall, "c3", "purge_tenant", "deny", "denied_by_rule", "not_executed")
		if len(recs) != 4 || len(byCall) != 3 {
			t.Errorf("%d audit records of %d calls, want 4 of 3 (a decision per call, a result for c1; the hidden tool is unknown to the model)", len(recs), len(byCall))
		}
		if !slices.Equal(deleted.SecureParams, []string{s.tenantName}) || len(byCall["c1"].SecureParams) != 0 {
			t.Errorf("audit secureParams: delete_order %v, get_order %v; want [%s] and []",
				deleted.SecureParams, byCall["c1"].SecureParams, s.tenantName)
		}
		if len(deleted.Approvers) != 0 {
			t.Errorf("the rejected ask records approvers %+v, want none (nobody could be asked)", deleted.Approvers)
		}
		if !slices.Contains(purged.Rules, "wide") || !slices.Contains(deleted.Rules, "deletes") {
			t.Errorf("audit rules: purge %v, delete %v; want wide and deletes among them", purged.Rules, deleted.Rules)
		}
		data, err := os.ReadFile(auditPath)
		if err != nil {
			t.Fatal(err)
		}
		rtWantNoText(t, "the audit file", string(data), s.tenantValue)
	})

	t.Run("auto", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, modeltest.Script{
			rtCalls(rtCall("c1", "shop__delete_order", obj{"query": "7"}), rtCall("c2", "shop__drop_cluster", obj{})),
			rtText("Done."),
		})
		s := rtNewShop(t, model)
		r := run(t, nil, "--config", s.cfg, "run", "clean up", "--output-format", "agenthost-stream-json", "--approve", "auto")
		wantCode(t, r, 0)
		events := rtEvents(t, r)
		rtEnd(t, events, "done", 2)
		rtWantCall(t, events, "c1", "shop", "delete_order", "approved", false)
		rtWantCall(t, events, "c2", "shop", "drop_cluster", "rejected", true)
		if a := rtOfType(rtOfCall(events, "c1"), "approval"); a[0].Decision != "ask" || a[0].Approvers != 1 {
			t.Errorf("single-approver ask: approval event %s, want decision ask with 1 approver", a[0].raw)
		}
		if a := rtOfType(rtOfCall(events, "c2"), "approval"); a[0].Decision != "ask" {
			t.Errorf("multi-approver ask: approval event %s, want decision ask", a[0].raw)
		}

		if got := s.executed(t); !slices.Equal(got, []string{"delete_order"}) {
			t.Errorf("the server ran %v, want only delete_order", got)
		}
		calls := rtToolCallsOf(t, readRecord(t, s.record), "delete_order")
		if len(calls) == 1 {
			if got, _ := secureArgumentsOf(t, calls[0]); got[s.tenantName] != s.tenantValue {
				t.Errorf("the approved call carried secureArguments %v, want the bound tenant", got)
			}
		}
		model.wantNoFailures(t)

		byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(s.cfg)))
		approved := rtWantAudit(t, byCall, "c1", "delete_order", "ask", "approved", "ok")
		if len(approved.Approvers) != 1 || approved.Approvers[0].ID != "auto" || approved.Approvers[0].Decision != "allow" || approved.Approvers[0].TS.IsZero() {
			t.Errorf("approved call's approvers %+v, want one allow vote by auto", approved.Approvers)
		}
		multi := rtWantAudit(t, byCall, "c2", "drop_cluster", "ask", "rejected", "not_executed")
		var risk struct {
			Category               string `json:"category"`
			ApprovalRecommendation string `json:"approvalRecommendation"`
			Source                 struct {
				Category string `json:"category"`
			} `json:"source"`
		}
		if err := json.Unmarshal(multi.Risk, &risk); err != nil || risk.Category != "delete" || risk.ApprovalRecommendation != "multi" || risk.Source.Category != "catalogue" {
			t.Errorf("drop_cluster audit risk %s, want the catalogue's delete/multi over the declared read", multi.Risk)
		}
	})
}

// TestRtApprovalPromptOnTerminal answers the approval question of `run`
// on a pseudo-terminal: y runs the call, n does not.
func TestRtApprovalPromptOnTerminal(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			model := rtStartModel(t, modeltest.Script{
				rtCalls(rtCall("c1", "shop__delete_order", obj{"query": "7"})),
				rtText("Done."),
			})
			s := rtNewShop(t, model)
			term := rtStartOnTerminal(t, "--config", s.cfg, "run", "delete order 7")
			term.waitOutput(t, 20*time.Second, "Allow?")
			if _, err := term.pty.Write([]byte(answer + "\n")); err != nil {
				t.Fatalf("typing the answer: %v", err)
			}
			code := term.wait(t, 20*time.Second)
			out := term.output()
			if code != 0 {
				t.Fatalf("exit code %d, want 0\n%s", code, out)
			}
			for _, want := range []string{"delete_order", `{"query":"7"}`, "Done."} {
				if !strings.Contains(out, want) {
					t.Errorf("the terminal does not show %q\n%s", want, out)
				}
			}
			rtWantNoText(t, "the terminal", out, s.tenantValue)
			model.wantNoFailures(t)

			byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(s.cfg)))
			if answer == "y" {
				if got := s.executed(t); !slices.Equal(got, []string{"delete_order"}) {
					t.Errorf("the server ran %v, want delete_order", got)
				}
				a := rtWantAudit(t, byCall, "c1", "delete_order", "ask", "approved", "ok")
				if len(a.Approvers) != 1 || a.Approvers[0].Decision != "allow" {
					t.Errorf("approvers %+v, want one allow vote", a.Approvers)
				}
			} else {
				if got := s.executed(t); len(got) != 0 {
					t.Errorf("the server ran %v after the answer n", got)
				}
				a := rtWantAudit(t, byCall, "c1", "delete_order", "ask", "rejected", "not_executed")
				if len(a.Approvers) != 1 || a.Approvers[0].Decision != "deny" {
					t.Errorf("approvers %+v, want one deny vote", a.Approvers)
				}
			}
		})
	}
}

// TestRtPromptDoesNotAskTheRequester: with the prompt answering as $USER
// and --subject naming the same person (in another spelling), every yes
// would be discarded as a self-approval. The ask is denied at once, without
// a question, and the message says why and what to change.
func TestRtPromptDoesNotAskTheRequester(t *testing.T) {
	t.Parallel()
	const reason = "cannot approve its own calls"
	check := func(t *testing.T, code int, out string, s rtShop) {
		t.Helper()
		if code != 3 {
			t.Errorf("exit code %d, want 3 (denied)\n%s", code, out)
		}
		if strings.Contains(out, "Allow?") {
			t.Errorf("asked a question whose answer cannot count\n%s", out)
		}
		for _, want := range []string{reason, "--subject"} {
			if !strings.Contains(out, want) {
				t.Errorf("the output does not say %q\n%s", want, out)
			}
		}
		if got := s.executed(t); len(got) != 0 {
			t.Errorf("the server ran %v", got)
		}
		recs := rtReadAudit(t, rtAuditPath(s.cfg))
		if len(recs) != 1 || recs[0].Outcome != "rejected" || recs[0].Result != "not_executed" {
			t.Errorf("audit %+v, want one rejected, not executed call", recs)
		}
	}
	args := func(s rtShop, extra ...string) []string {
		return append([]string{"--config", s.cfg, "call", "shop", "delete_order", "--args", `{"query":"7"}`, "--subject", "Tester\u200b"}, extra...)
	}
	t.Run("pipe", func(t *testing.T) {
		t.Parallel()
		s := rtNewShop(t, nil)
		r := run(t, []string{"USER=tester"}, args(s, "--approve", "prompt")...)
		check(t, r.code, r.stdout+r.stderr, s)
	})
	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		s := rtNewShop(t, nil)
		term := rtStartOnTerminalEnv(t, []string{"USER=tester"}, args(s)...)
		code := term.wait(t, 20*time.Second)
		check(t, code, term.output(), s)
	})
}

// rtTerminal is agenthost running with stdin, stdout and stderr on a
// pseudo-terminal.
type rtTerminal struct {
	cmd  *exec.Cmd
	pty  *os.File
	out  *syncBuffer
	read chan struct{} // closed when the terminal output ends
	done chan struct{}
}

func rtStartOnTerminal(t *testing.T, args ...string) *rtTerminal {
	t.Helper()
	return rtStartOnTerminalEnv(t, nil, args...)
}

// rtStartOnTerminalEnv is rtStartOnTerminal with extra environment
// variables (NAME=VALUE).
func rtStartOnTerminalEnv(t *testing.T, env []string, args ...string) *rtTerminal {
	t.Helper()
	return rtStartOnTerminalIn(t, t.TempDir(), env, args...)
}

// rtStartOnTerminalIn is rtStartOnTerminalEnv in the folder dir.
func rtStartOnTerminalIn(t *testing.T, dir string, env []string, args ...string) *rtTerminal {
	t.Helper()
	cmd := exec.Command(agenthostBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(baseEnv(t), "TERM=dumb"), env...)
	f, err := pty.Start(cmd) // a new session: the process group is cmd's pid
	if err != nil {
		t.Fatalf("starting agenthost on a pseudo-terminal: %v", err)
	}
	term := &rtTerminal{cmd: cmd, pty: f, out: &syncBuffer{}, read: make(chan struct{}), done: make(chan struct{})}
	go func() {
		_, _ = io.Copy(term.out, f) // ends with EIO once no process holds the terminal
		close(term.read)
	}()
	go func() {
		_ = cmd.Wait()
		close(term.done)
	}()
	t.Cleanup(func() {
		_ = killProcessGroup(cmd)
		<-term.done
		_ = f.Close()
		<-term.read
	})
	return term
}

func (term *rtTerminal) output() string { return term.out.String() }

func (term *rtTerminal) waitOutput(t *testing.T, within time.Duration, want string) {
	t.Helper()
	deadline := time.After(within)
	for !strings.Contains(term.output(), want) {
		select {
		case <-term.done:
			t.Fatalf("agenthost exited before showing %q\n%s", want, term.output())
		case <-deadline:
			t.Fatalf("the terminal did not show %q within %s\n%s", want, within, term.output())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// wait waits for the exit and the rest of the terminal output, and
// returns the exit code.
func (term *rtTerminal) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-term.done:
	case <-time.After(within):
		t.Fatalf("agenthost did not exit within %s\n%s", within, term.output())
	}
	select {
	case <-term.read:
	case <-time.After(5 * time.Second):
		t.Errorf("the terminal output did not end after agenthost exited")
	}
	return term.cmd.ProcessState.ExitCode()
}

// rtCatalogueDoc is `policy catalogue` output.
type rtCatalogueDoc struct {
	Approvals struct {
		Catalogue []struct {
			Server   string         `yaml:"server"`
			Tool     string         `yaml:"tool"`
			Metadata map[string]any `yaml:"metadata"`
		} `yaml:"catalogue"`
	} `yaml:"approvals"`
}

// TestRtEverythingPolicy: with server-everything and inferred
// classification, `policy catalogue` classifies every tool it lists (and
// the YAML loads back as the config's catalogue), and `policy explain`
// agrees with what `run` does.
func TestRtEverythingPolicy(t *testing.T) {
	t.Parallel()
	node, script := everythingServer(t)
	rules := []obj{
		{"id": "reads", "when": obj{"category": []string{"read", "observe"}}, "decide": "allow"},
		{"id": "writes", "when": obj{"category": []string{"mutate"}}, "decide": "ask", "approvers": 1},
		{"id": "deletes", "when": obj{"category": []string{"delete", "destroy"}}, "decide": "ask", "approvers": 2},
		{"id": "wide", "when": obj{"blastRadius": []string{"organization", "global"}}, "decide": "deny"},
	}
	everything := obj{"command": node, "args": []string{script}}
	type probe struct {
		id, tool, args string
	}
	probes := []probe{
		{"g1", "get-sum", `{"a":1,"b":2}`},
		{"g2", "echo", `{"message":"hi"}`},
		// The same tool, widened to global by its arguments.
		{"g3", "echo", `{"message":"hi","organization":"*"}`},
	}
	var calls []modeltest.ToolCall
	for _, p := range probes {
		calls = append(calls, rtCall(p.id, "everything__"+p.tool, p.args))
	}
	model := rtStartModel(t, modeltest.Script{rtCalls(calls...), rtText("Done.")})
	cfg := writeConfig(t, obj{
		"llm":        model.llm(),
		"mcpServers": obj{"everything": everything},
		"approvals":  obj{"unclassified": "infer", "rules": rules, "noMatch": "ask"},
	})

	// Every listed tool gets exactly one complete classification.
	tr := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, tr, 0)
	var listed []string
	for _, tl := range decodeStdout[toolsDoc](t, tr).server(t, "everything").Tools {
		if tl.Status != "excluded" {
			listed = append(listed, tl.Name)
		}
	}
	r := run(t, nil, "--config", cfg, "policy", "catalogue", "--server", "everything")
	wantCode(t, r, 0)
	var doc rtCatalogueDoc
	if err := yaml.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("policy catalogue is not YAML: %v\n%s", err, r)
	}
	var classified []string
	for _, e := range doc.Approvals.Catalogue {
		classified = append(classified, e.Tool)
		if e.Server != "everything" {
			t.Errorf("entry for %s names server %q", e.Tool, e.Server)
		}
		for _, key := range []string{"category", "riskLevel", "blastRadius", "reversibility", "approvalRecommendation", "minTrustLevel"} {
			if v, ok := e.Metadata[key]; !ok || v == "" || v == nil {
				t.Errorf("entry for %s has no %s: %v", e.Tool, key, e.Metadata)
			}
		}
	}
	slices.Sort(listed)
	slices.Sort(classified)
	if len(listed) == 0 || !slices.Equal(listed, classified) {
		t.Errorf("catalogue classifies %v, tools --json lists %v", classified, listed)
	}

	// Pasted into the config, the catalogue is what every tool's risk
	// comes from.
	pasted := writeConfig(t, obj{
		"mcpServers": obj{"everything": everything},
		"approvals":  obj{"unclassified": "strict", "catalogue": doc.Approvals.Catalogue, "rules": rules, "noMatch": "ask"},
	})
	pr := run(t, nil, "--config", pasted, "tools", "--json")
	wantCode(t, pr, 0)
	pastedDoc := decodeStdout[rtRiskDoc](t, pr)
	for _, e := range doc.Approvals.Catalogue {
		got := pastedDoc.tool(e.Tool)
		if len(got) != 1 {
			t.Errorf("with the pasted catalogue, tools --json lists %s %d times, want once", e.Tool, len(got))
		}
		for _, tl := range got {
			if tl.Risk.Source.Category != "catalogue" || tl.Risk.Category != e.Metadata["category"] {
				t.Errorf("%s with the pasted catalogue: category %s from %s, want %v from catalogue",
					e.Tool, tl.Risk.Category, tl.Risk.Source.Category, e.Metadata["category"])
			}
		}
	}

	// explain's exit code predicts the approval event of the same call.
	wantDecision := map[int]string{0: "allow", 10: "ask", 3: "deny"}
	wantOutcome := map[int]string{0: "auto_allowed", 10: "approved", 3: "denied_by_rule"}
	predicted := map[string]int{}
	seen := map[int]bool{}
	for _, p := range probes {
		x := run(t, nil, "--config", cfg, "policy", "explain", "everything", p.tool, "--args", p.args)
		if _, ok := wantDecision[x.code]; !ok {
			t.Fatalf("policy explain %s %s: exit %d, want 0, 10 or 3\n%s", p.tool, p.args, x.code, x)
		}
		predicted[p.id] = x.code
		seen[x.code] = true
	}
	if len(seen) != 3 {
		t.Fatalf("the probes cover explain exits %v; want allow, ask and deny so the comparison means something", seen)
	}
	r = run(t, nil, "--config", cfg, "run", "probe", "--output-format", "agenthost-stream-json", "--approve", "auto")
	wantCode(t, r, 0)
	events := rtEvents(t, r)
	rtEnd(t, events, "done", 2)
	for _, p := range probes {
		code := predicted[p.id]
		approval := rtOfType(rtOfCall(events, p.id), "approval")
		if len(approval) != 1 {
			t.Errorf("%s %s: %d approval events, want 1", p.tool, p.args, len(approval))
			continue
		}
		if approval[0].Decision != wantDecision[code] || approval[0].Outcome != wantOutcome[code] {
			t.Errorf("%s %s: explain exit %d, but run decided %s (%s)", p.tool, p.args, code, approval[0].Decision, approval[0].Outcome)
		}
	}
	model.wantNoFailures(t)

	// A tool explain denies whatever the arguments is not offered to the
	// model at all.
	var hidden []string
	for _, tl := range decodeStdout[toolsDoc](t, tr).server(t, "everything").Tools {
		if tl.Status == "hidden" {
			hidden = append(hidden, tl.Name)
		}
	}
	if len(hidden) == 0 {
		t.Fatalf("no tool of server-everything is hidden under the deny rule; the check below would be empty")
	}
	x := run(t, nil, "--config", cfg, "policy", "explain", "everything", hidden[0])
	wantCode(t, x, 3)
	if tools := string(model.recording(t).ToolsOf(0)); strings.Contains(tools, `"everything__`+hidden[0]+`"`) {
		t.Errorf("explain denies %s, yet run offered it to the model", hidden[0])
	}
}

// rtRiskDoc reads the risk keys of `tools --json`.
type rtRiskDoc struct {
	Servers []struct {
		Tools []rtRiskTool `json:"tools"`
	} `json:"servers"`
}

type rtRiskTool struct {
	Name string `json:"name"`
	Risk struct {
		Category string `json:"category"`
		Source   struct {
			Category string `json:"category"`
		} `json:"source"`
	} `json:"risk"`
}

func (d rtRiskDoc) tool(name string) []rtRiskTool {
	var out []rtRiskTool
	for _, s := range d.Servers {
		for _, tl := range s.Tools {
			if tl.Name == name {
				out = append(out, tl)
			}
		}
	}
	return out
}
