package bindings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const literalCanary = "lit-canary-7Hq2"

func newTestBinder(t *testing.T, bindings []Binding, sources map[string]Source, opts ...Option) *Binder {
	t.Helper()
	b, err := NewBinder(bindings, sources, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestNewBinderRejects(t *testing.T) {
	vault := SourceFunc(func(context.Context, Request) (Resolved, error) { return Resolved{}, nil })
	tests := []struct {
		name     string
		bindings []Binding
		sources  map[string]Source
		want     string // substring of the error
	}{
		{"two kinds", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Value: literalCanary, Env: "X"}}}}, nil, "bindings[0].params.p: more than one"},
		{"no kind", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {}}}}, nil, "bindings[0].params.p: no value"},
		{"unknown source", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Source: "vault"}}}}, nil, `unknown source "vault"`},
		{"built-in as source", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Source: "env", Ref: "X"}}}}, nil, "built-in kind"},
		{"ref without source", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Env: "X", Ref: "y"}}}}, nil, "bindings[0].params.p: ref is only used with source"},
		{"source without ref", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Source: "vault"}}}}, map[string]Source{"vault": EnvSource{}}, "bindings[0].params.p: ref is required with source"},
		{"bad sensitivity", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Value: literalCanary, Sensitivity: "top"}}}}, nil, `unknown sensitivity "top"`},
		{"null literal", []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Value: []byte(literalCanary)}}}}, nil, "[]byte"},
		{"bad server glob", []Binding{{Server: "[", Params: map[string]ParamBinding{"p": {Env: "X"}}}}, nil, "bindings[0]: server pattern"},
		{"bad tool glob", []Binding{{Server: "s", Tools: []string{"ok", "[x"}, Params: map[string]ParamBinding{"p": {Env: "X"}}}}, nil, `tool pattern "[x"`},
		{"empty param", []Binding{{Server: "s", Params: map[string]ParamBinding{"": {Env: "X"}}}}, nil, "empty parameter name"},
		{"reserved source name", nil, map[string]Source{"file": vault}, "reserved"},
		{"nil source", nil, map[string]Source{"vault": nil}, "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBinder(tt.bindings, tt.sources)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), literalCanary) {
				t.Fatalf("error shows a literal value: %v", err)
			}
		})
	}
}

func TestBinderLookupSpecificity(t *testing.T) {
	env := func(name string) ParamBinding { return ParamBinding{Env: name} }
	bindings := []Binding{
		0: {Server: "*", Params: map[string]ParamBinding{"token": env("ANY_SERVER"), "region": env("DEFAULT_REGION")}},
		1: {Server: "orders", Params: map[string]ParamBinding{"token": env("ORDERS_ALL_TOOLS")}},
		2: {Server: "orders", Tools: []string{"get_*"}, Params: map[string]ParamBinding{"token": env("ORDERS_GETTERS")}},
		3: {Server: "orders", Tools: []string{"get_order"}, Params: map[string]ParamBinding{"token": env("ORDERS_GET_ORDER")}},
		4: {Server: "ord*", Tools: []string{"delete_order"}, Params: map[string]ParamBinding{"token": env("GLOB_SERVER_EXACT_TOOL")}},
		5: {Server: "orders", Tools: []string{"get_*"}, Params: map[string]ParamBinding{"token": env("ORDERS_GETTERS_LATER")}},
		6: {Server: "", Tools: []string{"list_*"}, Params: map[string]ParamBinding{"Token": env("CASE_SENSITIVE")}},
		7: {Server: "files", Tools: []string{"fs_*"}, Params: map[string]ParamBinding{"token": env("FILES_FS")}},
	}
	b := newTestBinder(t, bindings, nil)
	tests := []struct {
		server, tool, param string
		wantRef             string // "" means unbound
		wantBinding         int
	}{
		{"orders", "get_order", "token", "ORDERS_GET_ORDER", 3},    // exact tool beats glob
		{"orders", "get_item", "token", "ORDERS_GETTERS_LATER", 5}, // later entry wins a tie
		{"orders", "put_item", "token", "ORDERS_ALL_TOOLS", 1},     // no tools = every tool
		{"orders", "delete_order", "token", "ORDERS_ALL_TOOLS", 1}, // exact server beats glob server + exact tool
		{"ordinals", "delete_order", "token", "GLOB_SERVER_EXACT_TOOL", 4},
		{"ordinals", "list", "token", "ANY_SERVER", 0},
		{"billing", "x", "token", "ANY_SERVER", 0},
		{"orders", "get_order", "region", "DEFAULT_REGION", 0}, // only bindings naming the param count
		{"orders", "list_x", "Token", "CASE_SENSITIVE", 6},
		{"orders", "get_order", "TOKEN", "", 0},
		{"orders", "get_order", "missing", "", 0},
		{"files", "fs_read/all", "token", "FILES_FS", 7}, // * matches across /
		{"files", "other", "token", "ANY_SERVER", 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.server, tt.tool, tt.param), func(t *testing.T) {
			for range 2 { // second round is served from the memo
				spec, ok := b.Lookup(tt.server, tt.tool, tt.param)
				if ok != (tt.wantRef != "") {
					t.Fatalf("ok = %v, spec %v", ok, spec)
				}
				if !ok {
					continue
				}
				want := Spec{Source: SourceEnv, Ref: tt.wantRef, Sensitivity: Secret, Binding: tt.wantBinding}
				if diff := cmp.Diff(want, spec); diff != "" {
					t.Fatalf("spec (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestSpecPrintsNoValue(t *testing.T) {
	b := newTestBinder(t, []Binding{{Server: "s", Params: map[string]ParamBinding{"p": {Value: literalCanary}}}}, nil)
	spec, ok := b.Lookup("s", "t", "p")
	if !ok {
		t.Fatal("unbound")
	}
	js, _ := json.Marshal(spec)
	for _, out := range []string{spec.String(), fmt.Sprintf("%v %+v %#v", spec, spec, spec), string(js)} {
		if strings.Contains(out, literalCanary) {
			t.Fatalf("spec output holds the literal: %s", out)
		}
	}
	if got := spec.String(); got != "value:bindings[0].params.p (internal)" {
		t.Errorf("String() = %q", got)
	}
}

func TestBinderBound(t *testing.T) {
	b := newTestBinder(t, []Binding{{Server: "orders", Params: map[string]ParamBinding{
		"project_id": {Value: "retail-prod"},
		"instance":   {Session: "instance"},
	}}}, nil)
	params := []string{"project_id", "instance", "region"}
	bound, unbound := b.Bound("orders", "q", params)
	if !slices.Equal(bound, []string{"project_id", "instance"}) || !slices.Equal(unbound, []string{"region"}) {
		t.Fatalf("Bound = %v / %v", bound, unbound)
	}
	tests := []struct {
		name   string
		values SessionValues
		want   []string
	}{
		{"no session values", nil, []string{"project_id"}},
		{"session has it", MapValues{"instance": "db-7"}, []string{"project_id", "instance"}},
		{"session has it empty", MapValues{"instance": ""}, []string{"project_id"}},
		{"session has others", MapValues{"other": "x"}, []string{"project_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			if tt.values != nil {
				ctx = ContextWithSessionValues(ctx, tt.values)
			}
			bound, _ := b.BoundFor(ctx, "orders", "q", params)
			if !slices.Equal(bound, tt.want) {
				t.Fatalf("BoundFor = %v, want %v", bound, tt.want)
			}
			if got := b.CanBind(ctx, "orders", "q", "instance"); got != slices.Contains(tt.want, "instance") {
				t.Fatalf("CanBind(instance) = %v", got)
			}
		})
	}
}

// countingSource answers "<ref>/<subject>" and counts calls.
type countingSource struct {
	calls atomic.Int64
	err   error
	s     Sensitivity
}

func (c *countingSource) Resolve(_ context.Context, req Request) (Resolved, error) {
	c.calls.Add(1)
	if c.err != nil {
		return Resolved{}, c.err
	}
	return Resolved{Value: req.Ref + "/" + req.Subject, Sensitivity: c.s}, nil
}

func TestBinderResolve(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token.txt")
	if err := os.WriteFile(tokenFile, []byte("file-secret-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTHOST_TEST_ORDERS_REGION", "region-eu-9")
	vault := &countingSource{s: Public} // the binding, not the source, decides sensitivity
	b := newTestBinder(t, []Binding{{Server: "orders", Params: map[string]ParamBinding{
		"project_id":    {Value: "retail-prod"},
		"shards":        {Value: 12},
		"dry_run":       {Value: false, Sensitivity: "public"},
		"instance":      {Session: "instance"},
		"region":        {Env: "AGENTHOST_TEST_ORDERS_REGION", Sensitivity: "internal"},
		"token":         {File: tokenFile},
		"session_token": {Source: "vault", Ref: "orders/token"},
		"api_key":       {Source: "vault", Ref: "api_key"},
	}}}, map[string]Source{"vault": vault})

	ctx := ContextWithSessionValues(t.Context(), MapValues{"instance": "db-prod-04"})
	params := map[string]json.RawMessage{}
	for _, p := range []string{"project_id", "shards", "dry_run", "instance", "region", "token", "session_token", "api_key"} {
		params[p] = json.RawMessage(`{"type":"string"}`)
	}
	scope := Scope{SessionID: "s1", Subject: "alice", Server: "orders", Tool: "query"}
	got, err := b.Resolve(ctx, scope, params, []string{"project_id", "instance"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Resolved{
		"project_id":    {Value: "retail-prod", Sensitivity: Internal},
		"shards":        {Value: "12", Sensitivity: Internal},
		"dry_run":       {Value: "false", Sensitivity: Public},
		"instance":      {Value: "db-prod-04", Sensitivity: Secret},
		"region":        {Value: "region-eu-9", Sensitivity: Internal},
		"token":         {Value: "file-secret-1", Sensitivity: Secret},
		"session_token": {Value: "orders/token/alice", Sensitivity: Secret},
		"api_key":       {Value: "api_key/alice", Sensitivity: Secret},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Resolve (-want +got):\n%s", diff)
	}
	red := b.Redactor()
	for name, v := range want {
		masked := red.Redact("x " + v.Value + " x")
		if hidden := masked == "x "+RedactedText+" x"; hidden != (v.Sensitivity >= Internal && len(v.Value) >= MinRedactLen) {
			t.Errorf("%s (%v): redacted to %q", name, v.Sensitivity, masked)
		}
	}
}

func TestBinderResolveSkipsUnboundOptional(t *testing.T) {
	b := newTestBinder(t, []Binding{{Server: "s", Params: map[string]ParamBinding{
		"a":        {Value: "aaaa"},
		"instance": {Session: "instance"},
	}}}, nil)
	params := map[string]json.RawMessage{"a": nil, "instance": nil, "unbound_optional": nil}
	got, err := b.Resolve(t.Context(), Scope{Server: "s", Tool: "t"}, params, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["a"].Value != "aaaa" {
		t.Fatalf("got %v, want only a", got)
	}
}

func TestBinderResolveUnboundCallsNoSource(t *testing.T) {
	vault := &countingSource{}
	b := newTestBinder(t, []Binding{{Server: "s", Params: map[string]ParamBinding{
		"token":    {Source: "vault", Ref: "token"},
		"instance": {Session: "instance"},
	}}}, map[string]Source{"vault": vault})
	params := map[string]json.RawMessage{"token": nil, "instance": nil, "project": nil}
	tests := []struct {
		name     string
		ctx      context.Context
		required []string
		want     []string
	}{
		{"no binding", t.Context(), []string{"token", "project"}, []string{"project"}},
		{"session value missing", t.Context(), []string{"instance", "token"}, []string{"instance"}},
		{"required but undeclared", ContextWithSessionValues(t.Context(), MapValues{"instance": "i"}), []string{"zeta", "alpha"}, []string{"alpha", "zeta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Resolve(tt.ctx, Scope{Server: "s", Tool: "t"}, params, tt.required)
			var ue *UnboundError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnbound) || errors.Is(err, ErrResolve) {
				t.Fatalf("err = %v, want *UnboundError", err)
			}
			if !slices.Equal(ue.Params, tt.want) {
				t.Fatalf("Params = %v, want %v", ue.Params, tt.want)
			}
			if n := vault.calls.Load(); n != 0 {
				t.Fatalf("source called %d times before failing", n)
			}
		})
	}
}

func TestBinderResolveSourceError(t *testing.T) {
	const secret = "session-secret-XY12"
	leaky := SourceFunc(func(context.Context, Request) (Resolved, error) {
		return Resolved{}, fmt.Errorf("backend refused token %s: %w", secret, errBackend)
	})
	b := newTestBinder(t, []Binding{{Server: "s", Params: map[string]ParamBinding{
		"a_session": {Session: "tok"},
		"b_vault":   {Source: "vault", Ref: "b_vault"},
		"c_env":     {Env: "AGENTHOST_TEST_SURELY_UNSET"},
	}}}, map[string]Source{"vault": leaky})
	ctx := ContextWithSessionValues(t.Context(), MapValues{"tok": secret})
	params := map[string]json.RawMessage{"a_session": nil, "b_vault": nil}

	_, err := b.Resolve(ctx, Scope{Server: "s", Tool: "t"}, params, nil)
	var re *ResolveError
	if !errors.As(err, &re) || !errors.Is(err, ErrResolve) || !errors.Is(err, errBackend) {
		t.Fatalf("err = %v, want *ResolveError wrapping the source error", err)
	}
	if re.Param != "b_vault" || re.Source != "vault" {
		t.Fatalf("got param %q source %q", re.Param, re.Source)
	}
	if msg := err.Error(); strings.Contains(msg, secret) || !strings.Contains(msg, "b_vault") || !strings.Contains(msg, RedactedText) {
		t.Fatalf("message = %q", msg)
	}

	_, err = b.Resolve(ctx, Scope{Server: "s", Tool: "t"}, map[string]json.RawMessage{"c_env": nil}, nil)
	if !errors.As(err, &re) || re.Param != "c_env" || !errors.Is(err, ErrNotSet) || !strings.Contains(err.Error(), "AGENTHOST_TEST_SURELY_UNSET") {
		t.Fatalf("env error = %v", err)
	}
}

func TestBinderInvalidate(t *testing.T) {
	vault := &countingSource{}
	b := newTestBinder(t, []Binding{{Server: "s", Params: map[string]ParamBinding{"token": {Source: "vault", Ref: "token"}}}}, map[string]Source{"vault": vault})
	scope := Scope{SessionID: "s1", Subject: "alice", Server: "s", Tool: "t"}
	params := map[string]json.RawMessage{"token": nil}
	for range 3 {
		if _, err := b.Resolve(t.Context(), scope, params, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := vault.calls.Load(); n != 1 {
		t.Fatalf("calls = %d, want 1 (cached)", n)
	}
	scope.Param = "token"
	b.Invalidate(scope)
	if _, err := b.Resolve(t.Context(), scope, params, nil); err != nil {
		t.Fatal(err)
	}
	if n := vault.calls.Load(); n != 2 {
		t.Fatalf("calls after Invalidate = %d, want 2", n)
	}
	b.ForgetSession("s1")
	if _, err := b.Resolve(t.Context(), scope, params, nil); err != nil {
		t.Fatal(err)
	}
	if n := vault.calls.Load(); n != 3 {
		t.Fatalf("calls after ForgetSession = %d, want 3", n)
	}
}
