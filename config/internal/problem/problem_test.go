package problem

import (
	"errors"
	"testing"
)

func TestKeyPaths(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Key("", "llm"), "llm"},
		{Key("mcpServers", "orders"), "mcpServers.orders"},
		{Key("mcpServers", "my.server"), `mcpServers["my.server"]`},
		{Key("mcpServers", ""), `mcpServers[""]`},
		{Index(Key("mcpServers.a", "args"), 2), "mcpServers.a.args[2]"},
		{Join("approvals", "rules[0].when"), "approvals.rules[0].when"},
		{Join("approvals", "[0]"), "approvals[0]"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestList(t *testing.T) {
	l := &List{File: "cfg.yaml"}
	if l.Err() != nil {
		t.Fatal("an empty list is an error")
	}
	l.Add("llm.model", "is required")
	if got := l.Err().Error(); got != "cfg.yaml: llm.model: is required" {
		t.Errorf("one problem: %q", got)
	}
	cause := errors.New("cause")
	l.AddCause("", "whole file", cause)
	err := l.Err()
	if !errors.Is(err, ErrConfig) || !errors.Is(err, cause) || len(Leaves(err)) != 2 {
		t.Errorf("two problems: %v (leaves %d)", err, len(Leaves(err)))
	}
}
