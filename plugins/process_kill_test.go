//go:build linux

package plugins

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// TestKillBeforePidIsKnown: the child runs before Start has stored its
// pid, so a Kill (Source.Close killing a start in progress) can land in
// between. That Kill must still end the child; it used to do nothing,
// and Close then waited out the whole start timeout.
func TestKillBeforePidIsKnown(t *testing.T) {
	tests := []struct {
		name string
		when string // when Kill is called
	}{
		{"kill between exec and pid", "started"},
		{"kill before start", "before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *processRunner
			started := func() {
				if tt.when == "started" {
					_ = r.Kill(context.Background())
				}
			}
			r, err := newProcessRunner(exec.Command("sleep", "3600"), "", started, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.when == "before" {
				_ = r.Kill(context.Background())
			}
			if err := r.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- r.Wait(context.Background()) }()
			select {
			case err := <-waited:
				if err == nil {
					t.Fatal("the child exited cleanly; want it killed")
				}
			case <-time.After(time.Minute):
				_ = r.cmd.Process.Kill()
				<-waited
				t.Fatal("the child still ran a minute after Kill")
			}
		})
	}
}
