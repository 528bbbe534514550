package rules

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
)

// A check vouches for the bytes it checked and for nothing else: the same
// text elsewhere, a prefix of it, or rewritten arguments are not valid by
// it, and its JSON form is norm.JSONOrString's.
func TestArgsCheckVouchesForItsBytesOnly(t *testing.T) {
	args := json.RawMessage(" {\"a\":1}\f")
	c := CheckArgs(args)
	if !c.Valid(args) {
		t.Fatalf("CheckArgs(%q) does not vouch for them", args)
	}
	if trimmed := args[1:8]; !c.Valid(trimmed) {
		t.Errorf("the check does not vouch for its trimmed bytes %q", trimmed)
	}
	same := json.RawMessage(string(args))
	if c.Valid(same) {
		t.Error("a check vouches for a copy it did not make")
	}
	if c.Valid(args[:5]) || c.Valid(nil) {
		t.Error("a check vouches for a prefix of its bytes, or none")
	}
	if (ArgsCheck{}).Valid(args) {
		t.Error("the zero check vouches for arguments")
	}
	if got, want := c.JSONOrString(args), norm.JSONOrString(args); !bytes.Equal(got, want) {
		t.Errorf("JSONOrString = %q, want %q", got, want)
	}
	cp, cc := c.Clone(args)
	if !cc.Valid(cp) || cc.Valid(args) || c.Valid(cp) || !bytes.Equal(cp, args) {
		t.Errorf("Clone: the copy's check does not hold for the copy alone")
	}
	for _, bad := range []string{``, `  `, `{"a":`, `{} x`, `{}` + "\xc2\xa0x", `nul`} {
		raw := json.RawMessage(bad)
		if CheckArgs(raw).Valid(raw) {
			t.Errorf("CheckArgs(%q) vouches for them", bad)
		}
		if _, cc := CheckArgs(raw).Clone(raw); cc.Valid(raw) {
			t.Errorf("Clone of the check of %q vouches", bad)
		}
	}
}

// ValidAsGiven is json.Valid of the arguments as given: true only when the
// check vouches for them and TrimSpace dropped nothing but JSON's own
// whitespace around them.
func TestArgsCheckValidAsGiven(t *testing.T) {
	tests := []struct {
		args string
		want bool
	}{
		{`{"a":1}`, true},
		{" \t\r\n{\"a\":1} \t\r\n", true},
		{`null`, true},
		{"{\"a\":1}\f", false},
		{"\v{}", false},
		{"{}\u00a0", false},
		{"\u0085{}", false},
		{"{}\u3000", false},
		{" ", false},
		{``, false},
		{`{"a":`, false},
		{"{\"a\":\"\u00a0\"}", true},
	}
	for _, tt := range tests {
		args := json.RawMessage(tt.args)
		if got := CheckArgs(args).ValidAsGiven(args); got != tt.want || got != json.Valid(args) {
			t.Errorf("ValidAsGiven(%q) = %v, want %v (json.Valid %v)", tt.args, got, tt.want, json.Valid(args))
		}
	}
	args := json.RawMessage(`{"a":1}`)
	if CheckArgs(args).ValidAsGiven(bytes.Clone(args)) || (ArgsCheck{}).ValidAsGiven(args) {
		t.Error("ValidAsGiven vouches for bytes it did not check")
	}
}

// CheckArgs decides as json.Valid of the trimmed arguments does, and the
// check's JSON form is norm.JSONOrString's, for any arguments.
func FuzzCheckArgs(f *testing.F) {
	for _, s := range escalateSeeds() {
		f.Add(s)
	}
	f.Add(" {\"a\":1}\f")
	f.Add("{}\u00a0")
	f.Add("\"\xff\"")
	f.Fuzz(func(t *testing.T, s string) {
		args := json.RawMessage(s)
		c := CheckArgs(args)
		trimmed := bytes.TrimSpace(args)
		if want := len(trimmed) > 0 && json.Valid(trimmed); c.Valid(args) != want {
			t.Fatalf("CheckArgs(%q).Valid = %v, json.Valid of the trimmed arguments %v", s, !want, want)
		}
		if got, want := c.JSONOrString(args), norm.JSONOrString(args); !bytes.Equal(got, want) {
			t.Fatalf("JSONOrString(%q) = %q, norm.JSONOrString %q", s, got, want)
		}
		if got, want := c.ValidAsGiven(args), json.Valid(args); got != want {
			t.Fatalf("CheckArgs(%q).ValidAsGiven = %v, json.Valid %v", s, got, want)
		}
		cp, cc := c.Clone(args)
		if !bytes.Equal(cp, args) || cc.Valid(cp) != c.Valid(args) {
			t.Fatalf("Clone(%q): copy %q, valid %v, want %v", s, cp, cc.Valid(cp), c.Valid(args))
		}
	})
}

// Deciding a call whose arguments were checked, under a policy without
// expressions, allocates only what Normalize copies of the risk: not the
// call or its risk moved to the heap for an expression input nobody
// reads, nor a clone of the risk by the escalators.
func TestDecideCheckedAllocations(t *testing.T) {
	p := mustPolicy(t, contractConfig())
	eff := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastNamespace, risk.ApprovalSingle, 2)
	eff.SideEffects = []string{"cost"}
	args := json.RawMessage(`{"id":"42","note":"ship it"}`) // no escalator: the fast path
	call := Call{Server: "orders", Tool: "update_order", Args: args, ArgsCheck: CheckArgs(args), TrustLevel: 3}
	normalize := testing.AllocsPerRun(200, func() { _ = eff.Normalize() })
	decide := testing.AllocsPerRun(200, func() { _ = p.Decide(eff, call) })
	if decide > normalize {
		t.Errorf("Decide allocates %v times, Normalize alone %v", decide, normalize)
	}
}
