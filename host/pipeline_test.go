package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/secureparams"
)

// stageFunc is a stage made of a function: the next stage of a stage
// under test.
type stageFunc func(ctx context.Context, c *call) (*CallResult, error)

func (f stageFunc) serve(ctx context.Context, c *call) (*CallResult, error) { return f(ctx, c) }

// reached is a next stage that notes it was reached and answers an empty
// result.
func reached(hit *bool) stage {
	return stageFunc(func(context.Context, *call) (*CallResult, error) {
		*hit = true
		return &CallResult{Result: &mcp.CallToolResult{}}, nil
	})
}

// stageFixture is a host on the secure test server whose audit records go
// to sink and whose logs to logs; echo and execute_sql are reads by the
// operator's catalogue (allowed), boom is unclassified.
type stageFixture struct {
	h    *Host
	s    *Session
	srv  *mcptest.Server
	sink *recordSink
	logs *strings.Builder
}

func newStageFixture(t *testing.T, sink auditlog.Sink) *stageFixture {
	t.Helper()
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(secureTools)})
	str := func(s string) *string { return &s }
	read := risk.RawMetadata{Category: str("read"), RiskLevel: str("low"), BlastRadius: str("item"), Reversibility: str("auto"),
		ApprovalRecommendation: str("none"), MinTrustLevel: 1}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {URL: url, Type: config.TransportHTTP, CallTimeout: 5 * time.Second}},
		Bindings: []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{
			"project_id": {Value: "retail-prod"}, "instance": {Session: "instance"}, "region": {Value: "us-west1"}}}},
		Approvals: rules.Config{
			Catalogue: []rules.CatalogueEntry{{Server: "db", Tool: "echo", Metadata: read}, {Server: "db", Tool: "execute_sql", Metadata: read}},
			Rules:     []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}},
		},
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	f := &stageFixture{srv: srv, logs: &strings.Builder{}}
	f.sink, _ = sink.(*recordSink)
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, f.logs}, nil))
	h, err := New(Options{Config: cfg, Logger: logger, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.redactor.Add(canary)
	f.h, f.s = h, h.NewSession(SessionOptions{Values: map[string]string{"instance": "inst-1"}})
	return f
}

// lookedUp is a call of tool with args as the lookup stage hands it on.
func (f *stageFixture) lookedUp(t *testing.T, tool, args string, info callInfo) *call {
	t.Helper()
	c := &call{s: f.s, server: "db", tool: tool, args: json.RawMessage(args), info: info}
	var hit bool
	if _, err := (lookupStage{next: reached(&hit)}).serve(context.Background(), c); err != nil || !hit {
		t.Fatalf("lookup %s: %v", tool, err)
	}
	return c
}

func TestLookupStage(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	for _, tc := range []struct {
		name, server, tool, args string
		kind                     Kind
		is                       error
	}{
		{name: "offered", server: "db", tool: "echo", args: `{"text":"hi"}`},
		{name: "absent arguments are {}", server: "db", tool: "echo", args: ``},
		{name: "unknown server", server: "nope", tool: "echo", args: `{}`, kind: KindUnavailable, is: ErrUnknownServer},
		{name: "arguments not an object", server: "db", tool: "echo", args: `[1]`, kind: KindToolError},
		{name: "arguments not JSON", server: "db", tool: "echo", args: `{`, kind: KindToolError},
		{name: "tool not offered", server: "db", tool: "nope", args: `{}`, kind: KindUnavailable, is: ErrToolUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &call{s: f.s, server: tc.server, tool: tc.tool, args: json.RawMessage(tc.args)}
			var hit bool
			_, err := (lookupStage{next: reached(&hit)}).serve(context.Background(), c)
			if tc.kind == "" {
				if err != nil || !hit || c.ct == nil || c.ct.Tool.Name != tc.tool || c.decisions != 1 || !json.Valid(c.arguments) {
					t.Fatalf("err %v, reached %v, call %+v", err, hit, c)
				}
				return
			}
			if hit || KindOf(err) != tc.kind || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err %v (%s), reached %v; want kind %s, %v", err, KindOf(err), hit, tc.kind, tc.is)
			}
		})
	}
}

// The lookup stage checks the arguments as given once it found the tool:
// the guard first.
func TestLookupStageGuard(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	for _, tc := range []struct {
		name      string
		args      string
		fromModel bool
		kind      Kind // "": the call goes on
		is        error
		warn      string
	}{
		{name: "plain arguments", args: `{"query":"select 1"}`, fromModel: true},
		{name: "a secure name", args: `{"query":"x","instance":"other"}`, kind: KindBinding, is: ErrSecureNameInArguments, warn: "possible prompt injection"},
		{name: "a repeated key", args: `{"query":"x","query":"y"}`, kind: KindToolError, is: ErrDuplicateKeyInArguments, warn: "repeat a key"},
		{name: "a protected value from the model", args: `{"query":"` + canary + `"}`, fromModel: true, kind: KindBinding, is: ErrSecretInArguments, warn: "possible exfiltration"},
		{name: "a protected value from the operator", args: `{"query":"` + canary + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &call{s: f.s, server: "db", tool: "execute_sql", args: json.RawMessage(tc.args), info: callInfo{fromModel: tc.fromModel}}
			var hit bool
			_, err := (lookupStage{next: reached(&hit)}).serve(context.Background(), c)
			if tc.kind == "" {
				if err != nil || !hit {
					t.Fatalf("err %v, reached %v", err, hit)
				}
				return
			}
			var r *refusal
			if hit || !errors.As(err, &r) || KindOf(r.err) != tc.kind || !errors.Is(r.err, tc.is) {
				t.Fatalf("err %v (%s), reached %v; want a refusal of kind %s, %v", err, KindOf(err), hit, tc.kind, tc.is)
			}
			if r.outcome != rules.OutcomeInjectionBlocked || r.rec != nil || !strings.Contains(r.warn, tc.warn) {
				t.Errorf("refusal %+v", r)
			}
			if strings.Contains(r.err.Error(), canary) || strings.Contains(r.err.(*Error).ModelMessage, canary) {
				t.Errorf("the refusal names the protected value: %v", r.err)
			}
		})
	}
}

// Then the tool's inputSchema, when the call asks for it.
func TestLookupStageSchema(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	for _, tc := range []struct {
		name  string
		args  string
		check bool
		kind  Kind
	}{
		{name: "valid", args: `{"query":"select 1"}`, check: true},
		{name: "a required property missing", args: `{}`, check: true, kind: KindToolError},
		{name: "a property of the wrong type", args: `{"query":1}`, check: true, kind: KindToolError},
		{name: "not asked to check", args: `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &call{s: f.s, server: "db", tool: "execute_sql", args: json.RawMessage(tc.args), info: callInfo{checkSchema: tc.check}}
			var hit bool
			_, err := (lookupStage{next: reached(&hit)}).serve(context.Background(), c)
			if hit != (tc.kind == "") || (err == nil) != (tc.kind == "") || (err != nil && KindOf(err) != tc.kind) {
				t.Fatalf("err %v (%s), reached %v; want kind %q", err, KindOf(err), hit, tc.kind)
			}
		})
	}
}

// The refuse stage owns every refusal: it logs it, writes its record (not
// executed) and hands back the refusal's error; anything else passes
// through unaudited.
func TestRefuseStage(t *testing.T) {
	denied := errors.New("denied for the test")
	gateRec := &auditlog.Record{Phase: auditlog.PhaseDecision, Outcome: rules.OutcomeDeniedByRule, Result: auditlog.ResultNotExecuted}
	allowedRec := &auditlog.Record{Phase: auditlog.PhaseDecision, Outcome: rules.OutcomeAutoAllowed, Result: auditlog.ResultPending}
	for _, tc := range []struct {
		name        string
		answer      error
		wantRecord  bool
		wantOutcome rules.Outcome
		wantWarn    string
	}{
		{name: "before the gate", answer: &refusal{warn: "refused for the test", outcome: rules.OutcomeInjectionBlocked, err: denied},
			wantRecord: true, wantOutcome: rules.OutcomeInjectionBlocked, wantWarn: "refused for the test"},
		{name: "by the gate", answer: &refusal{rec: gateRec, err: denied}, wantRecord: true, wantOutcome: rules.OutcomeDeniedByRule},
		{name: "after the gate", answer: &refusal{outcome: rules.OutcomeBindingFailed, rec: allowedRec, err: denied},
			wantRecord: true, wantOutcome: rules.OutcomeBindingFailed},
		{name: "an error that is no refusal", answer: denied},
		{name: "a result", answer: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recordSink{}
			f := newStageFixture(t, sink)
			c := f.lookedUp(t, "echo", `{}`, callInfo{id: "call-1"})
			next := stageFunc(func(context.Context, *call) (*CallResult, error) {
				if tc.answer == nil {
					return &CallResult{}, nil
				}
				return nil, tc.answer
			})
			res, err := (refuseStage{next: next}).serve(context.Background(), c)
			if (tc.answer == nil) != (err == nil) || (tc.answer != nil && !errors.Is(err, denied)) || (tc.answer == nil && res == nil) {
				t.Fatalf("res %v, err %v", res, err)
			}
			var r *refusal
			if errors.As(err, &r) {
				t.Fatalf("the refusal went up as it was: %v", err)
			}
			if !tc.wantRecord {
				if len(sink.records) != 0 {
					t.Fatalf("audited %+v", sink.records)
				}
				return
			}
			if len(sink.records) != 1 {
				t.Fatalf("%d records, want 1", len(sink.records))
			}
			rec := sink.records[0]
			if rec.Outcome != tc.wantOutcome || rec.Result != auditlog.ResultNotExecuted || rec.Phase != auditlog.PhaseDecision {
				t.Errorf("record %s/%s/%s, want %s/not_executed/decision", rec.Phase, rec.Outcome, rec.Result, tc.wantOutcome)
			}
			if tc.answer.(*refusal).rec == nil && (rec.CallID != "call-1" || rec.Tool != "echo" || rec.Decision != rules.ActionDeny) {
				t.Errorf("deny record %+v", rec)
			}
			if tc.wantWarn != "" && !strings.Contains(f.logs.String(), tc.wantWarn) {
				t.Errorf("not logged: %q in %s", tc.wantWarn, f.logs)
			}
		})
	}
}

// subjectKey carries the subject subjectAuth put in a context.
type subjectKey struct{}

// subjectAuth is an Authorizer that only marks a context with its
// subject.
type subjectAuth struct{ Authorizer }

func (subjectAuth) WithSubject(ctx context.Context, subject string) context.Context {
	return context.WithValue(ctx, subjectKey{}, subject)
}

// subjectSink notes the subject of each write's context.
type subjectSink struct{ got *[]any }

func (s subjectSink) Write(ctx context.Context, _ *auditlog.Record) error {
	*s.got = append(*s.got, ctx.Value(subjectKey{}))
	return nil
}
func (subjectSink) Close() error { return nil }

// The refuse stage runs the call as the session's subject, writes a
// refusal's record under it, and gives a failed authorization its Kind
// (not a denial, and not one that is already of that Kind).
func TestRefuseStageRunsAsTheSubject(t *testing.T) {
	failure := &hosterr.AuthorizationFailure{Message: "log in first", Subject: "alice", Err: errors.New("401")}
	unavailable := hosterr.New(KindUnavailable, hosterr.MsgUnavailable, failure, "db/echo: 401")
	denied := hosterr.New(KindDenied, hosterr.MsgUnavailable, failure, "db/echo: denied")
	for _, tc := range []struct {
		name    string
		auth    bool
		answer  error
		kind    Kind // "": no error
		records int
	}{
		{name: "a result", auth: true},
		{name: "no Authorizer", answer: &refusal{outcome: rules.OutcomeInjectionBlocked, err: errors.New("no")}, kind: KindInternal, records: 1},
		{name: "an authorization failure", auth: true, answer: unavailable, kind: KindAuthorization},
		{name: "a refused authorization failure", auth: true, answer: &refusal{outcome: rules.OutcomeBindingFailed, err: unavailable}, kind: KindAuthorization, records: 1},
		{name: "a denial stays one", auth: true, answer: denied, kind: KindDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []any
			f := newStageFixture(t, subjectSink{&got})
			if tc.auth {
				f.h.auth = subjectAuth{}
			}
			f.s.subject = "alice"
			c := f.lookedUp(t, "echo", `{}`, callInfo{id: "call-1"})
			var seen any
			next := stageFunc(func(ctx context.Context, _ *call) (*CallResult, error) {
				seen = ctx.Value(subjectKey{})
				if tc.answer == nil {
					return &CallResult{}, nil
				}
				return nil, tc.answer
			})
			_, err := (refuseStage{next: next}).serve(context.Background(), c)
			want := any(nil)
			if tc.auth {
				want = "alice"
			}
			if seen != want || (tc.kind == "") != (err == nil) || (err != nil && KindOf(err) != tc.kind) {
				t.Fatalf("next ran as %v, err %v (%s); want %v, kind %q", seen, err, KindOf(err), want, tc.kind)
			}
			if len(got) != tc.records || (tc.records > 0 && got[0] != want) {
				t.Fatalf("records written as %v, want %d as %v", got, tc.records, want)
			}
			if tc.kind == KindAuthorization {
				var e *Error
				if !errors.As(err, &e) || e.Message != "db/echo: log in first" || e.ModelMessage != hosterr.MsgAuthorization.String() {
					t.Errorf("error %+v", e)
				}
			}
		})
	}
}

func TestGateAnswer(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	gateErr := errors.New("the approver went away")
	for _, tc := range []struct {
		name     string
		res      approvals.Result
		gateErr  error
		detached bool
		kind     Kind // "": allowed
		refused  bool
		is       error
	}{
		{name: "allowed", res: approvals.Result{Decision: rules.Decision{Action: rules.ActionAllow}, Outcome: rules.OutcomeAutoAllowed}},
		{name: "denied by a rule", res: approvals.Result{Decision: rules.Decision{Action: rules.ActionDeny, Reason: "no"}, Outcome: rules.OutcomeDeniedByRule},
			kind: KindDenied, refused: true, is: ErrDenied},
		{name: "denied with an explanation", res: approvals.Result{Decision: rules.Decision{Action: rules.ActionAsk}, Outcome: rules.OutcomeRejected, Explanation: "ask someone"},
			kind: KindDenied, refused: true, is: ErrDenied},
		{name: "the workflow failed", res: approvals.Result{Outcome: rules.OutcomeError}, gateErr: gateErr, kind: KindDenied, refused: true, is: gateErr},
		{name: "the wait detached", res: approvals.Result{Outcome: rules.OutcomeError}, gateErr: gateErr, detached: true, kind: KindInternal, is: gateErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []Event
			c := f.lookedUp(t, "echo", `{}`, callInfo{id: "call-1", emit: func(e Event) { events = append(events, e) }})
			check, err := f.s.gateCheck(c)
			if err != nil {
				t.Fatal(err)
			}
			err = f.s.gateAnswer(c, check, tc.res, tc.gateErr, tc.detached)
			if len(events) != 1 || events[0].Type != EventApproval || events[0].Outcome != string(tc.res.Outcome) {
				t.Errorf("events %+v, want one approval event", events)
			}
			if tc.kind == "" {
				if err != nil || c.rec == nil || c.rec.Result != auditlog.ResultPending || c.decision == nil || c.decision.Outcome != string(tc.res.Outcome) {
					t.Fatalf("err %v, rec %+v, decision %+v", err, c.rec, c.decision)
				}
				return
			}
			var r *refusal
			if KindOf(err) != tc.kind || !errors.Is(err, tc.is) || errors.As(err, &r) != tc.refused || c.rec != nil {
				t.Fatalf("err %v (%s, refusal %v), rec %v; want kind %s, refusal %v", err, KindOf(err), r != nil, c.rec, tc.kind, tc.refused)
			}
			if r != nil && (r.rec == nil || r.rec.Result != auditlog.ResultNotExecuted || r.outcome != "") {
				t.Errorf("refusal %+v, want the gate's record as it is", r)
			}
		})
	}
}

// A sink that already failed refuses the call before the approval
// workflow asks anyone.
func TestGateCheckRefusesAFailedSink(t *testing.T) {
	sink := &recordSink{fail: errors.New("disk full")}
	f := newStageFixture(t, sink)
	c := f.lookedUp(t, "echo", `{}`, callInfo{})
	var hit bool
	_, err := (decideStage{next: reached(&hit)}).serve(context.Background(), c)
	if hit || !errors.Is(err, ErrAuditFailed) || KindOf(err) != KindInternal {
		t.Fatalf("err %v (%s), reached %v", err, KindOf(err), hit)
	}
}

func TestTighten(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	c := f.lookedUp(t, "echo", `{}`, callInfo{})
	for _, tc := range []struct {
		name   string
		v      hooks.PreVerdict
		action rules.Action
		by     string
	}{
		{name: "no word", v: hooks.PreVerdict{Context: []string{"note"}}},
		{name: "allow does not loosen", v: hooks.PreVerdict{Decision: hooks.DecisionAllow, By: "h1"}},
		{name: "deny", v: hooks.PreVerdict{Decision: hooks.DecisionDeny, By: "h1", Reason: "no"}, action: rules.ActionDeny, by: "hook:h1"},
		{name: "ask", v: hooks.PreVerdict{Decision: hooks.DecisionAsk, By: "h1", Reason: "why"}, action: rules.ActionAsk, by: "hook:h1"},
		{name: "a failed hook denies", v: hooks.PreVerdict{Failure: errors.New("exit 1"), By: "h1"}, action: rules.ActionDeny, by: "hook:h1:failed"},
		{name: "a hook that timed out denies", v: hooks.PreVerdict{Failure: fmt.Errorf("slow: %w", hooks.ErrTimeout), By: "h1"}, action: rules.ActionDeny, by: "hook:h1:timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.s.tighten(c, tc.v)
			if got.action != tc.action || got.by != tc.by || !slices.Equal(got.context, tc.v.Context) {
				t.Fatalf("tighten %+v, want %s by %q", got, tc.action, tc.by)
			}
			if tc.v.Failure == nil && got.message != tc.v.Reason {
				t.Errorf("message %q, want the hook's reason", got.message)
			}
			if tc.v.Failure != nil && got.message != "" {
				t.Errorf("a failed hook's words reach the model: %q", got.message)
			}
		})
	}
}

func TestPostHooked(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	result := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("rows")}}
	for _, tc := range []struct {
		name    string
		pre     []string // the PreToolUse hooks' additionalContext
		v       *hooks.PostVerdict
		rule    string
		want    []string // the texts the model gets
		isError bool
	}{
		{name: "no hook ran", want: []string{"rows"}},
		{name: "no hook ran, a pre hook's context", pre: []string{"pre note"}, want: []string{"rows", "pre note"}},
		{name: "a hook left it", v: &hooks.PostVerdict{Context: []string{"post note"}}, pre: []string{"pre note"}, want: []string{"rows", "pre note", "post note"}},
		{name: "a hook withheld it", v: &hooks.PostVerdict{Withheld: true, Reason: "private", By: "h1"}, rule: "hook:h1:withheld",
			want: []string{"The tool ran, but a hook withheld its result. Hook note: private"}, isError: true},
		{name: "a hook failed", v: &hooks.PostVerdict{Failure: errors.New("exit 3"), By: "h1"}, rule: "hook:h1:failed",
			want: []string{"The tool ran, but a hook withheld its result."}, isError: true},
		{name: "a hook replaced it", v: &hooks.PostVerdict{Replaced: json.RawMessage(`"shorter"`), By: "h1"}, rule: "hook:h1:replaced", want: []string{"shorter"}},
		{name: "a replacement is redacted", v: &hooks.PostVerdict{Replaced: json.RawMessage(`"` + canary + `"`), By: "h1"}, rule: "hook:h1:replaced", want: []string{"[REDACTED]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.lookedUp(t, "echo", `{}`, callInfo{})
			if tc.pre != nil {
				c.tighten = &callTighten{context: tc.pre}
			}
			got, rule := f.s.postHooked(c, result, tc.v)
			var texts []string
			for _, ct := range got.Content {
				texts = append(texts, ct.(mcp.TextContent).Text)
			}
			if rule != tc.rule || !slices.Equal(texts, tc.want) || got.IsError != tc.isError {
				t.Fatalf("rule %q, texts %q, isError %v; want %q, %q, %v", rule, texts, got.IsError, tc.rule, tc.want, tc.isError)
			}
			if len(result.Content) != 1 {
				t.Fatalf("the server's result was changed: %+v", result.Content)
			}
		})
	}
}

func TestResend(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	ledger := errors.New("ledger down")
	for _, tc := range []struct {
		name    string
		tool    string
		prior   int
		sentErr error
		task    string
		taskErr error
		is      error // nil: sent
		kind    auditlog.ResultKind
	}{
		{name: "first send", tool: "boom"},
		{name: "the ledger failed", tool: "echo", sentErr: ledger, is: ledger, kind: auditlog.ResultNotExecuted},
		{name: "sent before, a task to follow", tool: "boom", prior: 1, task: "task-1"},
		{name: "sent before, idempotent by the catalogue", tool: "echo", prior: 1},
		{name: "sent twice before, idempotent", tool: "echo", prior: 2, is: ErrMaybeRan, kind: auditlog.ResultUnknown},
		{name: "sent before, not idempotent", tool: "boom", prior: 1, is: ErrMaybeRan, kind: auditlog.ResultUnknown},
		{name: "sent before, the task unreadable", tool: "boom", prior: 1, taskErr: ledger, is: ErrMaybeRan, kind: auditlog.ResultUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.lookedUp(t, tc.tool, `{}`, callInfo{})
			dc := &durableCall{Key: "turn/call"}
			err := f.s.resend(c, dc, tc.prior, tc.sentErr, tc.task, tc.taskErr)
			if (tc.is == nil) != (err == nil) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err %v, want %v", err, tc.is)
			}
			if c.resultKind != tc.kind || dc.Task != tc.task {
				t.Errorf("resultKind %q task %q; want %q %q", c.resultKind, dc.Task, tc.kind, tc.task)
			}
		})
	}
}

func TestRetryOf(t *testing.T) {
	rejected := &mcpconn.CallError{Failure: mcpconn.FailSecureRejected, Retry: mcpconn.RetryRenewed, Err: errors.New("expired")}
	unknown := &mcpconn.CallError{Failure: mcpconn.FailServerError, Retry: mcpconn.RetrySame, Err: errors.New("unknown tool")}
	other := &mcpconn.CallError{Failure: mcpconn.FailServerError, Err: errors.New("internal")}
	for _, tc := range []struct {
		name    string
		err     error
		retried bool
		want    mcpconn.Retry
	}{
		{name: "a result", want: mcpconn.RetryNone},
		{name: "secure values rejected", err: rejected, want: mcpconn.RetryRenewed},
		{name: "unknown tool still listed", err: unknown, want: mcpconn.RetrySame},
		{name: "any other answer", err: other, want: mcpconn.RetryNone},
		{name: "not a call error", err: errors.New("x"), want: mcpconn.RetryNone},
		{name: "the retry is not retried", err: rejected, retried: true, want: mcpconn.RetryNone},
		{name: "wrapped", err: fmt.Errorf("attempt: %w", unknown), want: mcpconn.RetrySame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryOf(tc.err, tc.retried); got != tc.want {
				t.Fatalf("retryOf = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestResultRecord(t *testing.T) {
	f := newStageFixture(t, &recordSink{})
	labels := []risk.ResultLabel{{Label: "untrusted"}}
	for _, tc := range []struct {
		name     string
		result   *CallResult
		err      error
		kind     auditlog.ResultKind
		hookRule string
		want     auditlog.ResultKind
		outcome  rules.Outcome
		phase    auditlog.Phase
	}{
		{name: "ok", result: &CallResult{Result: &mcp.CallToolResult{}, Labels: labels}, want: auditlog.ResultOK},
		{name: "a tool error", result: &CallResult{Result: &mcp.CallToolResult{IsError: true}}, want: auditlog.ResultToolError},
		{name: "a server error", err: hosterr.New(KindToolError, hosterr.MsgServerError, errors.New("x"), "x"), want: auditlog.ResultServerError},
		{name: "secure values rejected", err: hosterr.New(KindBinding, hosterr.MsgOperatorFailure, ErrSecureRejected, "x"), want: auditlog.ResultServerError, outcome: rules.OutcomeBindingFailed},
		{name: "maybe ran", err: hosterr.New(KindToolError, hosterr.MsgMaybeRan, ErrMaybeRan, "x"), kind: auditlog.ResultUnknown, want: auditlog.ResultUnknown},
		{name: "a hook's rule", result: &CallResult{Result: &mcp.CallToolResult{}}, hookRule: "hook:h1:withheld", want: auditlog.ResultOK},
		{name: "not sent", err: errors.New("ledger"), kind: auditlog.ResultNotExecuted, want: auditlog.ResultNotExecuted, phase: auditlog.PhaseDecision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.lookedUp(t, "echo", `{}`, callInfo{})
			c.rec = &auditlog.Record{Phase: auditlog.PhaseDecision, Outcome: rules.OutcomeAutoAllowed, Result: auditlog.ResultPending, Rules: []string{"reads"}}
			c.start, c.resultKind, c.hookRule = time.Now(), tc.kind, tc.hookRule
			done := f.h.resultRecord(c, tc.result, tc.err)
			outcome, phase := cmpOr(tc.outcome, rules.OutcomeAutoAllowed), cmpOr(tc.phase, auditlog.PhaseResult)
			if done.Result != tc.want || done.Outcome != outcome || done.Phase != phase {
				t.Fatalf("record %s/%s/%s, want %s/%s/%s", done.Phase, done.Outcome, done.Result, phase, outcome, tc.want)
			}
			wantRules := []string{"reads"}
			if tc.hookRule != "" {
				wantRules = append(wantRules, tc.hookRule)
			}
			if !slices.Equal(done.Rules, wantRules) {
				t.Errorf("rules %q, want %q", done.Rules, wantRules)
			}
			if tc.result != nil && !slices.Equal(done.ResultLabels, tc.result.Labels) {
				t.Errorf("labels %+v", done.ResultLabels)
			}
			if c.rec.Result != auditlog.ResultPending || len(c.rec.Rules) != 1 {
				t.Errorf("the decision record was changed: %+v", c.rec)
			}
		})
	}
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// orderSink notes each record it is handed in log.
type orderSink struct {
	log  *[]string
	fail error
}

func (s orderSink) Write(_ context.Context, r *auditlog.Record) error {
	*s.log = append(*s.log, "audit "+string(r.Phase)+" "+string(r.Result))
	return s.fail
}
func (orderSink) Close() error { return nil }

// No un-audited execution: the audit stage hands the decision record to
// the sink before the call goes on to be sent, and the result record
// after; a decision record that cannot be written sends nothing.
func TestAuditStageWritesTheDecisionBeforeTheSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail error
		want []string
	}{
		{name: "written", want: []string{"audit decision pending", "send", "audit result ok"}},
		{name: "not written", fail: errors.New("disk full"), want: []string{"audit decision pending"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			f := newStageFixture(t, orderSink{log: &log, fail: tc.fail})
			c := f.lookedUp(t, "echo", `{}`, callInfo{})
			c.rec = &auditlog.Record{Phase: auditlog.PhaseDecision, Result: auditlog.ResultPending}
			send := stageFunc(func(context.Context, *call) (*CallResult, error) {
				log = append(log, "send")
				return &CallResult{Result: &mcp.CallToolResult{}}, nil
			})
			redecide := stageFunc(func(context.Context, *call) (*CallResult, error) {
				t.Fatal("decided again for an unchanged definition")
				return nil, nil
			})
			_, err := (&auditStage{redecide: redecide, next: send}).serve(context.Background(), c)
			if (tc.fail == nil) != (err == nil) || !slices.Equal(log, tc.want) {
				t.Fatalf("err %v, order %q, want %q", err, log, tc.want)
			}
		})
	}
}

// A definition that changed while the call was decided is audited as not
// executed and decided again, at most maxRedecisions times, and never
// sent under the old decision.
func TestAuditStageDecidesAgainWhenTheDefinitionChanged(t *testing.T) {
	var log []string
	f := newStageFixture(t, orderSink{log: &log})
	c := f.lookedUp(t, "echo", `{}`, callInfo{})
	decided, err := secureparams.ParseTool(json.RawMessage(`{"name":"echo","description":"what the approver saw","inputSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	stale := CatalogTool{Server: "db", Tool: decided, Status: ToolActive}
	var st *auditStage
	st = &auditStage{
		next: stageFunc(func(context.Context, *call) (*CallResult, error) {
			t.Fatal("sent under a decision for another definition")
			return nil, nil
		}),
		redecide: stageFunc(func(ctx context.Context, c *call) (*CallResult, error) {
			log = append(log, "decide again")
			c.decisions++
			c.ct, c.rec = &stale, &auditlog.Record{Phase: auditlog.PhaseDecision, Result: auditlog.ResultPending}
			return st.serve(ctx, c)
		}),
	}
	c.ct, c.rec = &stale, &auditlog.Record{Phase: auditlog.PhaseDecision, Result: auditlog.ResultPending}
	_, err = st.serve(context.Background(), c)
	want := []string{"audit decision not_executed", "decide again", "audit decision not_executed", "decide again", "audit decision not_executed"}
	if !errors.Is(err, ErrToolUnavailable) || !slices.Equal(log, want) || c.decisions != maxRedecisions {
		t.Fatalf("err %v, decisions %d, order %q, want %q", err, c.decisions, log, want)
	}
}

// The order guarantee end to end: when the sink is handed a call's
// decision record the server has not been sent the call, and when it is
// handed the result record the server has answered it.
func TestPipelineAuditsBeforeItSends(t *testing.T) {
	var log []string
	f := newStageFixture(t, orderSink{log: &log})
	sink := f.h.audit
	f.h.setAudit(sentCounter{Sink: sink, srv: f.srv, log: &log})
	if _, err := f.s.CallTool(context.Background(), "db", "execute_sql", json.RawMessage(`{"query":"select 1"}`)); err != nil {
		t.Fatal(err)
	}
	want := []string{"tools/call sent 0", "audit decision pending", "tools/call sent 1", "audit result ok"}
	if !slices.Equal(log, want) {
		t.Fatalf("order %q, want %q", log, want)
	}
}

// sentCounter notes how many tools/call the server had been sent when
// each record reaches the sink.
type sentCounter struct {
	auditlog.Sink
	srv *mcptest.Server
	log *[]string
}

func (s sentCounter) Write(ctx context.Context, r *auditlog.Record) error {
	*s.log = append(*s.log, fmt.Sprintf("tools/call sent %d", len(s.srv.Recording().Messages("tools/call"))))
	return s.Sink.Write(ctx, r)
}

// stageNames are the types of the pipeline's stages from first to last.
func stageNames(first stage) []string {
	var names []string
	for st := first; st != nil; {
		v := reflect.Indirect(reflect.ValueOf(st))
		names = append(names, strings.TrimSuffix(v.Type().Name(), "Stage"))
		addressable := reflect.New(v.Type()).Elem()
		addressable.Set(v)
		next := addressable.FieldByName("next")
		if !next.IsValid() || next.IsNil() {
			break
		}
		// The field is unexported: read it through its address.
		st = reflect.NewAt(next.Type(), unsafe.Pointer(next.UnsafeAddr())).Elem().Interface().(stage)
	}
	return names
}

// The pipeline's order is the security model's: the argument checks (in
// the lookup stage, the guard before the schema, whose message quotes the
// arguments) before anything else, the hooks before the gate (they can
// only tighten it), secure values resolved only after the gate allowed the
// call (both in the decide stage), the decision audited before anything is
// sent, the result redacted before the PostToolUse hooks and the result
// record see it.
func TestPipelineOrder(t *testing.T) {
	core := []string{"refuse", "lookup", "decide", "audit"}
	for _, tc := range []struct {
		name string
		h    *Host
		want []string
	}{
		{name: "plain", h: &Host{}, want: slices.Concat(core, []string{"result", "send"})},
		{name: "observed, durable", h: &Host{obs: &recordingObserver{}, durable: fakeDurability{}},
			want: slices.Concat([]string{"observe"}, core, []string{"durable", "result", "send"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stageNames(newPipeline(tc.h)); !slices.Equal(got, tc.want) {
				t.Fatalf("stages %q, want %q", got, tc.want)
			}
		})
	}
}

// fakeDurability is a Durability that is never started.
type fakeDurability struct{ Durability }

// Each tools/call attempt is an MCP request of its own under the tool
// call, with its own trace context in params._meta: the retry with
// freshly resolved secure values too.
func TestEachAttemptIsAnMCPRequest(t *testing.T) {
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(`[
	 {"name": "strict", "x-test": {"errorCode": -32602, "errorMessage": "token expired"},
	  "inputSchema": {"type": "object"},
	  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]}}]`)})
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {URL: url, Type: config.TransportHTTP}},
		Bindings:   []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{"token": {Value: "t-1"}}}},
		Approvals:  readsAllowed(),
	}
	cfg.ApplyDefaults()
	obs := &recordingObserver{}
	h, err := New(Options{Config: cfg, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if _, err := h.NewSession(SessionOptions{}).CallTool(t.Context(), "db", "strict", nil); !errors.Is(err, ErrSecureRejected) {
		t.Fatalf("err = %v", err)
	}
	var got []string
	obs.mu.Lock()
	for _, l := range obs.lines {
		if strings.HasPrefix(l, "mcp") || strings.HasPrefix(l, "tool") {
			got = append(got, l)
		}
	}
	obs.mu.Unlock()
	want := []string{
		"tool db/strict",
		"mcp tools/call db/strict under tool", "mcp end failed=true code=-32602",
		"mcp tools/call db/strict under tool", "mcp end failed=true code=-32602",
		`tool end kind="binding" isError=false`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("hooks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	calls := srv.Recording().Messages("tools/call")
	if len(calls) != 2 {
		t.Fatalf("%d tools/call, want the call and its retry", len(calls))
	}
	for i, m := range calls {
		var meta map[string]any
		_ = json.Unmarshal(m.Params()["_meta"], &meta)
		if meta["traceparent"] == nil || meta["tracestate"] != "k=v" {
			t.Errorf("attempt %d: _meta %v, want its trace context", i+1, meta)
		}
	}
}

// decodeArguments is the call's one validation of its arguments: the check
// it hands on vouches for the object sent, and whatever check it is given
// (none, the turn's of the same bytes, one of other bytes) the answer is
// the one json.Valid and the object test give.
func TestDecodeArgumentsChecksOnce(t *testing.T) {
	for _, tc := range []struct {
		args, sent, err string
	}{
		{`{"a":1}`, `{"a":1}`, ""},
		{" {\"a\":1}\f", `{"a":1}`, ""},
		{``, `{}`, ""},
		{` null `, `{}`, ""},
		{`[1]`, "", "arguments are not a JSON object"},
		{`{"a":`, "", "arguments are not valid JSON: unexpected end of JSON input"},
		{"{}\u00a0x", "", "arguments are not valid JSON: invalid character"},
	} {
		raw := json.RawMessage(tc.args)
		for _, given := range []rules.ArgsCheck{{}, rules.CheckArgs(raw), rules.CheckArgs(json.RawMessage(`{"a":1}`))} {
			sent, check, err := decodeArguments(raw, given)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
				}
				continue
			}
			if err != nil || string(sent) != tc.sent {
				t.Errorf("%q: sent %q, %v; want %q", tc.args, sent, err, tc.sent)
				continue
			}
			if tc.sent != "{}" && !check.Valid(sent) {
				t.Errorf("%q: the check does not vouch for the object sent", tc.args)
			}
		}
	}
}
