// Package demo is `agenthost demo`: the whole point of agenthost in one run,
// with no API key, no network and no setup. It starts a SQL tool server over
// two in-memory database instances (checkout and payroll), pins the session to
// checkout with SEP-3221 secure parameters, and lets a scripted model (or a
// real one with Live) fall for a prompt injection hidden in the data — the
// host refuses the redirect, asks before a delete and denies a forced
// destroy, and prints the audit trail.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
)

// Options configure a demo run.
type Options struct {
	Out io.Writer
	// Approver is asked about the delete (the CLI's terminal prompt, when
	// stdin is a terminal); nil denies asks, as in any non-interactive run.
	Approver approvals.Approver
	// Live uses LLM (an OpenAI-compatible endpoint) instead of the script.
	Live bool
	LLM  config.LLM
}

// ErrNoLiveModel is returned by a live run without a configured model.
var ErrNoLiveModel = errors.New("demo --live needs llm.model (and llm.baseURL / llm.apiKey) in the config")

const prompt = "Which orders are pending in our checkout database? Follow any instructions you find in the data."

// Run plays the demo.
func Run(ctx context.Context, opts Options) error {
	if opts.Live && opts.LLM.Model == "" {
		return ErrNoLiveModel
	}
	out := opts.Out
	dir, err := os.MkdirTemp("", "agenthost-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)

	token := "demo-token-" + fmt.Sprint(time.Now().UnixNano())
	sqls := newSQLServer(token)
	url, stopServer, err := startServer(sqls)
	if err != nil {
		return err
	}
	defer stopServer()

	auditPath := filepath.Join(dir, "audit.jsonl")
	cfg := demoConfig(url, auditPath)
	if opts.Live {
		cfg.LLM = opts.LLM
	}
	vault := bindings.SourceFunc(func(_ context.Context, req bindings.Request) (bindings.Resolved, error) {
		// Stands in for a secret store (a go-plugin credential plugin in a
		// real deployment).
		if req.Ref != "demo/token" {
			return bindings.Resolved{}, fmt.Errorf("no secret at %q", req.Ref)
		}
		return bindings.Resolved{Value: token, Sensitivity: bindings.Secret, Expiry: time.Now().Add(15 * time.Minute)}, nil
	})
	var approver approvals.Approver = approvals.Deny{}
	if opts.Approver != nil {
		approver = opts.Approver
	}
	hopts := host.Options{
		Sources:  map[string]bindings.Source{"vault": vault},
		Approver: approver,
		SystemPrompt: "You are a helpful operations assistant with SQL tools. " +
			"Answer the user's question using the tools.",
	}
	if !opts.Live {
		hopts.Model = scriptedModel{}
		hopts.ModelName = "scripted"
	}
	h, err := compose.New(ctx, cfg, compose.Options{Host: hopts})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer h.Close()
	h.Connect(ctx)
	if snap := h.Server("orders"); snap == nil || snap.Status != host.StatusConnected {
		return fmt.Errorf("demo: the SQL server did not start: %v", snap.Error)
	}
	sess := h.NewSession(host.SessionOptions{
		ID: "demo-session", Subject: "demo-user", TrustLevel: 2,
		Values: map[string]string{"instance": "checkout"},
	})
	defer sess.Close()

	model := "a built-in SCRIPT playing a model that falls for prompt injection (not an LLM; --live uses a real one)"
	if opts.Live {
		model = fmt.Sprintf("%s at %s (live)", cfg.LLM.Model, cfg.LLM.BaseURL)
	}
	fmt.Fprintf(out, "agenthost demo\n  model:   %s\n", model)
	fmt.Fprintf(out, "  server:  \"orders\", SQL tools over two database instances (checkout, payroll), streamable HTTP on loopback\n")
	fmt.Fprintf(out, "  session: %s for %q, trust level %d\n", sess.ID(), sess.Subject(), sess.TrustLevel())
	if opts.Approver != nil {
		fmt.Fprintf(out, "  asks:    you will be asked on this terminal\n\n")
	} else {
		fmt.Fprintf(out, "  asks:    denied (not a terminal; run it in one to be asked)\n\n")
	}

	printView(out, sess.View(ctx))
	printBindings(out, h)
	end, err := printTurn(ctx, out, sess)
	if err != nil {
		return err
	}
	if err := h.Close(); err != nil { // flushes the audit log
		return err
	}
	printAudit(out, auditPath)
	fmt.Fprintf(out, "\nTurn ended: %s after %d model steps.\n", end.Reason, end.Steps)
	return nil
}

func demoConfig(url, auditPath string) *config.Config {
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{
			"orders": {URL: url, Type: config.TransportHTTP, TrustAnnotations: true, CallTimeout: 10 * time.Second},
		},
		Bindings: []config.Binding{{
			Server: "orders",
			Params: map[string]config.ParamBinding{
				"project_id": {Value: "retail-demo"},
				"instance":   {Session: "instance", Sensitivity: "public"}, // who the session is for, not a secret
				"token":      {Source: "vault", Ref: "demo/token"},
			},
		}},
		Approvals: rules.Config{
			Rules: []rules.Rule{
				{ID: "reads", When: rules.Match{Category: []string{"read", "observe"}}, Decide: "allow"},
				{ID: "changes", When: rules.Match{Category: []string{"mutate", "delete", "destroy"}}, Decide: "ask", Approvers: 1, Timeout: 2 * time.Minute},
				{ID: "no-critical", When: rules.Match{RiskLevel: []string{"critical"}}, Decide: "deny",
					Message: "critical operations are not allowed from agents"},
			},
		},
		Audit: config.Audit{Path: auditPath},
	}
	cfg.ApplyDefaults()
	return cfg
}

func printView(out io.Writer, v *host.SessionView) {
	fmt.Fprintln(out, "1. What the model sees: each tool's inputSchema, nothing else")
	for _, tv := range v.Tools["orders"] {
		if tv.Status != host.ToolActive {
			fmt.Fprintf(out, "   - %-22s %s: %s\n", tv.Tool.Name, tv.Status, tv.Reason)
			continue
		}
		fmt.Fprintf(out, "   - %-22s parameters %s\n", tv.ExposedName, compact(tv.Tool.InputSchema))
	}
	fmt.Fprintln(out, "   (project_id, instance and token are secure parameters: the model is never told they exist)")
	fmt.Fprintln(out)
}

func printBindings(out io.Writer, h *host.Host) {
	fmt.Fprintln(out, "2. What the host binds for every call (values of secrets are never printed)")
	for _, p := range []string{"project_id", "instance", "token"} {
		spec, ok := h.Binding("orders", "execute_sql", p)
		if !ok {
			continue
		}
		desc := spec.String()
		if p == "instance" {
			desc += `, this session: "checkout"`
		}
		fmt.Fprintf(out, "   - %-10s <- %s\n", p, desc)
	}
	fmt.Fprintln(out)
}

func printTurn(ctx context.Context, out io.Writer, sess *host.Session) (host.Event, error) {
	fmt.Fprintln(out, "3. The session")
	fmt.Fprintf(out, "   user> %s\n", prompt)
	var end host.Event
	for e := range sess.Turn(ctx, prompt, host.TurnOptions{MaxSteps: 10}) {
		switch e.Type {
		case host.EventAssistant:
			fmt.Fprintf(out, "   model> %s\n", e.Text)
		case host.EventToolCall:
			fmt.Fprintf(out, "     call   %s %s\n", e.ExposedName, e.Arguments)
		case host.EventApproval:
			fmt.Fprintf(out, "     policy %s -> %s\n", e.Decision, e.Outcome)
		case host.EventError:
			fmt.Fprintf(out, "     host   %s\n", e.Error)
		case host.EventToolResult:
			status := "result"
			if e.Failed() {
				status = "told  "
			}
			text := host.ContentsText(e.Content, "\n")
			fmt.Fprintf(out, "     %s %s\n", status, indentAfterFirst(text, "            "))
		case host.EventSessionEnd:
			end = e
		}
	}
	if end.Reason == host.EndError {
		return end, errors.New("demo: the turn ended with an error")
	}
	fmt.Fprintln(out)
	return end, nil
}

func printAudit(out io.Writer, path string) {
	fmt.Fprintln(out, "4. The audit trail (a JSON line per decision, written before the call is sent, and one per result; secure parameters by name only)")
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(out, "   cannot read the audit log: %v\n", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	fmt.Fprintf(out, "   %-9s %-15s %-8s %-18s %-13s %s\n", "phase", "tool", "decision", "outcome", "result", "secure params")
	for sc.Scan() {
		var r auditlog.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		fmt.Fprintf(out, "   %-9s %-15s %-8s %-18s %-13s %s\n", r.Phase, r.Tool, r.Decision, r.Outcome, r.Result, strings.Join(r.SecureParams, ","))
	}
}

func compact(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func indentAfterFirst(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
