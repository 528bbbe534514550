package demo

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDemoTellsTheWholeStory(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, Options{Out: &out}); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"built-in SCRIPT",
		"orders__execute_sql    parameters",
		"refused orders/execute_sql: the arguments name a host-controlled (secure) parameter; nothing was sent",
		"no such table: salaries",
		"policy ask -> rejected",
		"policy deny -> denied_by_rule",
		"execute_sql     deny     injection_blocked  not_executed",
		"drop_database   deny     denied_by_rule     not_executed",
		"Turn ended: done",
		// The instance is not a secret: the model's answer may name it.
		"pins this session to the checkout instance",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The payroll data never leaks, and neither does the token.
	for _, leak := range []string{"950000", "CEO", "demo-token-"} {
		if strings.Contains(text, leak) {
			t.Errorf("output contains %q", leak)
		}
	}
	// The model view names no secure parameter.
	view := text[strings.Index(text, "1. What"):strings.Index(text, "(project_id, instance")]
	for _, name := range []string{"project_id", "instance", "token"} {
		if strings.Contains(view, name) {
			t.Errorf("model view mentions %q:\n%s", name, view)
		}
	}
}

func TestDemoAsksOnATerminal(t *testing.T) {
	r, w := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), Options{Out: &out, In: r, Interactive: true}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "delete_rows") || !strings.Contains(out.String(), "[y]") {
		if time.Now().After(deadline) {
			t.Fatalf("no approval prompt:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := io.WriteString(w, "y\n"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(out.String(), "policy ask -> approved") || !strings.Contains(out.String(), "deleted 1 rows") {
		t.Errorf("approved delete did not run:\n%s", out.String())
	}
}
