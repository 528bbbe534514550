package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

func TestCloseWithinIsBounded(t *testing.T) {
	var out strings.Builder
	release := make(chan struct{})
	defer close(release)
	returned := make(chan struct{})
	go func() {
		cmdutil.CloseWithin(&out, 50*time.Millisecond, func() error { <-release; return nil })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("closeWithin waited for a close that never ends")
	}
	if !strings.Contains(out.String(), "shutting down took longer than 50ms") {
		t.Errorf("no word of the abandoned shutdown: %q", out.String())
	}

	out.Reset()
	cmdutil.CloseWithin(&out, time.Minute, func() error { return nil })
	if out.Len() != 0 {
		t.Errorf("a prompt close printed %q", out.String())
	}
}
