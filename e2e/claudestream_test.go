package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/host/modeltest"
)

// ccExtraTypes are agenthost's own event types in Claude Code's
// stream-json (docs/events.md): a Claude Code consumer skips them, so none
// may be one of its message types (ccValidate checks that too).
var ccExtraTypes = []string{"approval_requested", "approval", "error", "authorization"}

// ccLine is the part of a stream-json line the tests read.
type ccLine struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	SessionID      string `json:"session_id"`
	CWD            string `json:"cwd"`
	Model          string `json:"model"`
	PermissionMode string `json:"permissionMode"`
	Tools          []string
	MCPServers     []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	Message struct {
		ID      string `json:"id"`
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	} `json:"message"`
	Event struct {
		Type  string `json:"type"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	} `json:"event"`
	IsError           bool     `json:"is_error"`
	DurationMs        *int64   `json:"duration_ms"`
	DurationAPIMs     *int64   `json:"duration_api_ms"`
	NumTurns          int      `json:"num_turns"`
	Result            *string  `json:"result"`
	TotalCostUSD      *float64 `json:"total_cost_usd"`
	Errors            []string `json:"errors"`
	PermissionDenials []struct {
		ToolName  string          `json:"tool_name"`
		ToolUseID string          `json:"tool_use_id"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
	Usage struct {
		InputTokens          int `json:"input_tokens"`
		OutputTokens         int `json:"output_tokens"`
		CacheReadInputTokens int `json:"cache_read_input_tokens"`
	} `json:"usage"`

	// agenthost's own events
	CallID      string `json:"callId"`
	Outcome     string `json:"outcome"`
	ApprovalID  string `json:"approvalId"`
	RiskLevel   string `json:"riskLevel"`
	Explanation string `json:"explanation"`

	raw string
}

// ccLines parses stream-json output, one JSON object a line, and checks
// every line against the Claude Agent SDK's message types (ccValidate).
func ccLines(t *testing.T, r result) []ccLine {
	t.Helper()
	var out []ccLine
	var raws []string
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var l ccLine
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		if err := dec.Decode(&l); err != nil || dec.More() {
			t.Fatalf("stream-json line is not one JSON object: %q (%v)\n%s", sc.Text(), err, r)
		}
		l.raw = sc.Text()
		out = append(out, l)
		raws = append(raws, l.raw)
	}
	if len(out) < 2 {
		t.Fatalf("stream-json printed %d lines, want at least system/init and result\n%s", len(out), r)
	}
	ccValidate(t, raws)
	if out[0].Type != "system" || out[0].Subtype != "init" {
		t.Errorf("the first line is not system/init: %s", out[0].raw)
	}
	if last := out[len(out)-1]; last.Type != "result" {
		t.Errorf("the last line is not the result: %s", last.raw)
	}
	return out
}

func ccOfType(lines []ccLine, typ string) []ccLine {
	return slices.DeleteFunc(slices.Clone(lines), func(l ccLine) bool { return l.Type != typ })
}

// ccValidate type-checks every line whose type is not one of agenthost's
// own against SDKMessage, the union of the message types published in the
// pinned @anthropic-ai/claude-agent-sdk (e2e/peers/package.json), with
// the pinned TypeScript compiler: each line becomes `const lN: SDKMessage =
// LINE;` in a strict program, so a missing required field, a field of the
// wrong type and a field the type does not know all fail. It also checks
// that agenthost's own types are none of SDKMessage's.
func ccValidate(t *testing.T, lines []string) {
	t.Helper()
	peers := filepath.Join(moduleRoot, "e2e", "peers", "node_modules")
	sdk := filepath.Join(peers, "@anthropic-ai", "claude-agent-sdk", "sdk")
	tsc := filepath.Join(peers, "typescript", "bin", "tsc")
	for _, f := range []string{sdk + ".d.ts", tsc} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the npm peers are not installed (%v): run `make peers`", err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): install Node.js 20+ and run `make peers`", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "import type { SDKMessage } from %q;\n", sdk)
	extra := make([]string, len(ccExtraTypes))
	for i, typ := range ccExtraTypes {
		extra[i] = strconv.Quote(typ)
	}
	fmt.Fprintf(&b, "type Extra = %s;\n", strings.Join(extra, " | "))
	b.WriteString("export const agenthostTypesAreNotClaudeCodes: [Extract<Extra, SDKMessage[\"type\"]>] extends [never] ? true : false = true;\n")
	const header = 3 // lines before the first message
	lineOf := map[int]int{}
	for i, line := range lines {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			t.Fatalf("line %d is not JSON: %v", i+1, err)
		}
		if slices.Contains(ccExtraTypes, head.Type) {
			b.WriteString("\n")
			continue
		}
		lineOf[header+i+1] = i
		fmt.Fprintf(&b, "export const l%d: SDKMessage = %s;\n", i, line)
	}
	dir := t.TempDir()
	writeFile(t, dir, "lines.ts", []byte(b.String()))
	writeJSON(t, dir, "tsconfig.json", obj{
		"compilerOptions": obj{
			"strict": true, "noEmit": true, "skipLibCheck": true, "target": "es2022",
			"module": "esnext", "moduleResolution": "bundler",
			"typeRoots": []string{filepath.Join(peers, "@types")}, "types": []string{"node"},
		},
		"files": []string{"lines.ts"},
	})
	cmd := exec.Command(node, tsc, "-p", filepath.Join(dir, "tsconfig.json"), "--pretty", "false")
	cmd.Dir = dir
	outBytes, err := runCommand(t, cmd, 2*time.Minute)
	if err == nil {
		return
	}
	out := string(outBytes)
	var msg strings.Builder
	for _, m := range regexp.MustCompile(`lines\.ts\((\d+),\d+\): (.*)`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		if i, ok := lineOf[n]; ok {
			fmt.Fprintf(&msg, "line %d: %s\n  %s\n", i+1, m[2], lines[i])
		} else {
			fmt.Fprintf(&msg, "%s\n", m[0])
		}
	}
	t.Fatalf("stream-json lines are not Claude Agent SDK messages (%v):\n%s\n%s", err, msg.String(), out)
}

// runCommand runs cmd within d, returning its combined output.
func runCommand(t *testing.T, cmd *exec.Cmd, d time.Duration) ([]byte, error) {
	t.Helper()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		out, err = cmd.CombinedOutput()
	}()
	select {
	case <-done:
		return out, err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish within %s", cmd.Path, d)
		return nil, nil
	}
}

// TestCcStreamJSON runs a turn with an allowed, an asked (nobody answers:
// --approve deny) and a denied call under `--output-format stream-json`:
// every line is a Claude Agent SDK message or one of agenthost's own
// events, the calls come as tool_use and tool_result blocks named
// mcp__SERVER__TOOL, and the result counts the turns, the tokens, their
// cost from llm.prices and the two refused calls.
func TestCcStreamJSON(t *testing.T) {
	t.Parallel()
	model := rtStartModel(t, modeltest.Script{
		{Text: "Let me look.", ToolCalls: []modeltest.ToolCall{
			rtCall("c1", "shop__get_order", obj{"query": "7"}),
			rtCall("c2", "shop__delete_order", obj{"query": "7"}),
			rtCall("c3", "shop__purge_tenant", obj{"organization": "*"}),
		}, Usage: &modeltest.Usage{PromptTokens: 1000, CompletionTokens: 100}},
		{Text: "Done.", Usage: &modeltest.Usage{PromptTokens: 2000, CompletionTokens: 50}},
	})
	s := rtNewShop(t, model)
	cfg := rtWithPrices(t, s.cfg, obj{"scripted": obj{"input": 2.0, "output": 8.0}})
	r := run(t, nil, "--config", cfg, "run", "clean up", "--output-format", "stream-json", "--approve", "deny", "--session-id", "cc-1")
	wantCode(t, r, 0)
	wantNoCanary(t, r, s.tenantValue)
	lines := ccLines(t, r)

	init := lines[0]
	if init.SessionID != "cc-1" || init.Model != "scripted" || init.PermissionMode != "default" || !filepath.IsAbs(init.CWD) ||
		len(init.MCPServers) != 1 || init.MCPServers[0].Name != "shop" || init.MCPServers[0].Status != "connected" ||
		!slices.Contains(init.Tools, "mcp__shop__get_order") {
		t.Errorf("system/init: %s", init.raw)
	}
	uses := map[string]string{}
	results := ccResults(lines)
	var texts []string
	msgIDs := map[string]bool{}
	for _, l := range lines {
		for _, c := range l.Message.Content {
			switch {
			case l.Type == "assistant" && c.Type == "tool_use":
				uses[c.ID] = c.Name
				msgIDs[l.Message.ID] = true
			case l.Type == "assistant" && c.Type == "text":
				texts = append(texts, c.Text)
			}
		}
		if l.SessionID == "" && !slices.Contains(ccExtraTypes, l.Type) {
			t.Errorf("a line without session_id: %s", l.raw)
		}
	}
	wantUses := map[string]string{"c1": "mcp__shop__get_order", "c2": "mcp__shop__delete_order", "c3": "mcp__shop__purge_tenant"}
	if fmt.Sprint(uses) != fmt.Sprint(wantUses) || len(msgIDs) != 1 {
		t.Errorf("tool_use blocks %v in messages %v, want %v in one message", uses, msgIDs, wantUses)
	}
	if fmt.Sprint(results) != fmt.Sprint(map[string]bool{"c1": false, "c2": true, "c3": true}) {
		t.Errorf("tool_result blocks (is_error by id): %v", results)
	}
	if strings.Join(texts, "|") != "Let me look.|Done." {
		t.Errorf("assistant text blocks %q", texts)
	}
	// agenthost's own events ride along.
	asked := ccOfType(lines, "approval_requested")
	if len(asked) != 1 || asked[0].CallID != "c2" || asked[0].ApprovalID != "" || asked[0].Explanation == "" || asked[0].RiskLevel != "high" {
		t.Errorf("want one approval_requested for c2, nobody to ask and the fix: %v", asked)
	}
	if a := ccOfType(lines, "approval"); len(a) != 3 {
		t.Errorf("%d approval events, want 3", len(a))
	}

	res := lines[len(lines)-1]
	if res.Subtype != "success" || res.IsError || res.Result == nil || *res.Result != "Done." || res.NumTurns != 2 ||
		res.SessionID != "cc-1" || res.DurationMs == nil || res.DurationAPIMs == nil || *res.DurationAPIMs > *res.DurationMs {
		t.Errorf("result: %s", res.raw)
	}
	if res.Usage.InputTokens != 3000 || res.Usage.OutputTokens != 150 {
		t.Errorf("result usage %+v, want 3000 in, 150 out", res.Usage)
	}
	// 3000 input tokens at 2 USD and 150 output at 8 USD per million.
	if want := 0.0072; res.TotalCostUSD == nil || fmt.Sprintf("%.6f", *res.TotalCostUSD) != fmt.Sprintf("%.6f", want) {
		t.Errorf("total_cost_usd %v, want %v", res.TotalCostUSD, want)
	}
	var denied []string
	for _, d := range res.PermissionDenials {
		denied = append(denied, d.ToolUseID+" "+d.ToolName+" "+string(d.ToolInput))
	}
	slices.Sort(denied) // the calls of a step run concurrently
	if want := []string{`c2 mcp__shop__delete_order {"query":"7"}`, `c3 mcp__shop__purge_tenant {"organization":"*"}`}; !slices.Equal(denied, want) {
		t.Errorf("permission_denials %q, want %q", denied, want)
	}
	model.wantNoFailures(t)
}

// TestCcJSON: `--output-format json` prints one object, Claude Code's
// result (an SDKResultMessage of the pinned Agent SDK, type-checked as
// stream-json's lines are), as `claude -p --output-format json` does: the
// answer, the turns, the tokens with those the endpoint read from its cache
// (priced at cachedInput) and the refused calls. agenthost's session_end is
// --output-format agenthost-json (TestRtOutputFormats).
func TestCcJSON(t *testing.T) {
	t.Parallel()
	model := rtStartModel(t, modeltest.Script{
		{Text: "Let me look.", ToolCalls: []modeltest.ToolCall{
			rtCall("c1", "shop__get_order", obj{"query": "7"}),
			rtCall("c2", "shop__delete_order", obj{"query": "7"}),
		}, Usage: &modeltest.Usage{PromptTokens: 1000, CompletionTokens: 100}},
		{Text: "Done.", Usage: &modeltest.Usage{PromptTokens: 2000, CompletionTokens: 50, CachedTokens: 1000}},
	})
	s := rtNewShop(t, model)
	cfg := rtWithPrices(t, s.cfg, obj{"scripted": obj{"input": 2.0, "output": 8.0, "cachedInput": 0.5}})
	r := run(t, nil, "--config", cfg, "run", "clean up", "--output-format", "json", "--approve", "deny", "--session-id", "cc-1")
	wantCode(t, r, 0)
	wantNoCanary(t, r, s.tenantValue)
	out := strings.TrimSuffix(r.stdout, "\n")
	if strings.Contains(out, "\n") {
		t.Fatalf("json printed more than one line\n%s", r)
	}
	var res ccLine
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, r)
	}
	ccValidate(t, []string{out})
	if res.Type != "result" || res.Subtype != "success" || res.IsError || res.Result == nil || *res.Result != "Done." || res.NumTurns != 2 || res.SessionID != "cc-1" {
		t.Errorf("result: %s", out)
	}
	if res.Usage.InputTokens != 2000 || res.Usage.CacheReadInputTokens != 1000 || res.Usage.OutputTokens != 150 {
		t.Errorf("result usage %+v, want 2000 in, 1000 read from the cache, 150 out", res.Usage)
	}
	// 2000 input tokens at 2 USD, 1000 cached at 0.5 USD and 150 output at 8 USD per million.
	if want := 0.0057; res.TotalCostUSD == nil || fmt.Sprintf("%.6f", *res.TotalCostUSD) != fmt.Sprintf("%.6f", want) {
		t.Errorf("total_cost_usd %v, want %v", res.TotalCostUSD, want)
	}
	if len(res.PermissionDenials) != 1 || res.PermissionDenials[0].ToolUseID != "c2" || res.PermissionDenials[0].ToolName != "mcp__shop__delete_order" {
		t.Errorf("permission_denials %+v, want c2", res.PermissionDenials)
	}
	model.wantNoFailures(t)
}

// rtWithPrices adds llm.prices to the config at path.
func rtWithPrices(t *testing.T, path string, prices obj) string {
	t.Helper()
	return rtEditLLM(t, path, "prices", prices)
}

// rtEditLLM sets llm.KEY in the config at path.
func rtEditLLM(t *testing.T, path, key string, value any) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg obj
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	llm, ok := cfg["llm"].(obj)
	if !ok {
		t.Fatalf("the config has no llm section:\n%s", data)
	}
	llm[key] = value
	if data, err = yaml.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
