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

// CloneInto is Clone: the same bytes, a check that vouches for the copy
// exactly when the original's vouched for the original; the copy is in the
// room when it fits, capped at its length, and elsewhere when it does not.
func TestArgsCloneInto(t *testing.T) {
	room := make([]byte, 0, 16)
	for _, tc := range []struct {
		name    string
		args    json.RawMessage
		checked bool
		inRoom  bool
	}{
		{"fits", json.RawMessage(`{"a":1}`), true, true},
		{"fits exactly", json.RawMessage(`{"a":"12345678"}`), true, true},
		{"too long", json.RawMessage(`{"a":"123456789"}`), true, false},
		{"spaces around", json.RawMessage(" {\"a\":1} \n"), true, true},
		{"not checked", json.RawMessage(`{"a":1}`), false, true},
		{"invalid", json.RawMessage(`{"a":`), true, true},
		{"empty", json.RawMessage{}, true, false},
		{"nil", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := ArgsCheck{}
			if tc.checked {
				check = CheckArgs(tc.args)
			}
			wantOut, wantCheck := check.Clone(tc.args)
			out, got := check.CloneInto(room, tc.args)
			if !bytes.Equal(out, wantOut) || (out == nil) != (wantOut == nil) {
				t.Fatalf("copy %q (nil %v), want %q (nil %v)", out, out == nil, wantOut, wantOut == nil)
			}
			if got.Valid(out) != wantCheck.Valid(wantOut) || got.Valid(out) != check.Valid(tc.args) {
				t.Fatalf("the copy's check vouches %v, Clone's %v, the original's %v", got.Valid(out), wantCheck.Valid(wantOut), check.Valid(tc.args))
			}
			if in := len(out) > 0 && &out[0] == &room[:1][0]; in != tc.inRoom {
				t.Fatalf("copy in the room: %v, want %v", in, tc.inRoom)
			}
			if cap(out) != len(out) && tc.inRoom {
				t.Fatalf("the copy's capacity is %d, not its length %d", cap(out), len(out))
			}
		})
	}
}

// FuzzArgsCloneInto: CloneInto with any room gives what Clone gives.
func FuzzArgsCloneInto(f *testing.F) {
	f.Add([]byte(`{"a":1}`), 16, true)
	f.Add([]byte(" [1,2] "), 4, true)
	f.Add([]byte(`{"a":`), 64, true)
	f.Add([]byte{}, 0, false)
	f.Fuzz(func(t *testing.T, args []byte, roomLen int, checked bool) {
		check := ArgsCheck{}
		if checked {
			check = CheckArgs(args)
		}
		room := make([]byte, 0, max(0, roomLen%256))
		wantOut, wantCheck := check.Clone(args)
		out, got := check.CloneInto(room, args)
		if !bytes.Equal(out, wantOut) || (out == nil) != (wantOut == nil) {
			t.Fatalf("copy %q, want %q", out, wantOut)
		}
		if got.Valid(out) != wantCheck.Valid(wantOut) || !bytes.Equal(got.JSONOrString(out), wantCheck.JSONOrString(wantOut)) {
			t.Fatalf("the copies' checks differ: %v %v", got.Valid(out), wantCheck.Valid(wantOut))
		}
		if len(args) > 0 && !bytes.Equal(args, out) {
			t.Fatal("the copy is not the arguments")
		}
	})
}
