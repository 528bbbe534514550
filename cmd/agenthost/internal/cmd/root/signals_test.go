package root

import (
	"os"
	"syscall"
	"testing"
	"time"
)

type exitCall struct {
	code int
	msg  string
}

// TestWatchSignals: a signal cancels the command; a command that cannot see
// the cancellation (a CPU-bound step) does not keep the process alive past
// the grace period, nor past a second signal.
func TestWatchSignals(t *testing.T) {
	tests := []struct {
		name       string
		grace      time.Duration
		turn       bool // a REPL turn is running at the first signal
		signals    []os.Signal
		stops      bool // the command returns after the signals
		wantCancel bool
		wantExit   *exitCall
	}{
		{name: "SIGTERM, command never returns", grace: time.Millisecond, signals: []os.Signal{syscall.SIGTERM},
			wantCancel: true, wantExit: &exitCall{code: 143}},
		{name: "SIGINT, command never returns", grace: time.Millisecond, signals: []os.Signal{os.Interrupt},
			wantCancel: true, wantExit: &exitCall{code: 130}},
		{name: "second signal", grace: time.Hour, signals: []os.Signal{os.Interrupt, syscall.SIGTERM},
			wantCancel: true, wantExit: &exitCall{code: 143}},
		{name: "command returns", grace: time.Hour, signals: []os.Signal{syscall.SIGTERM}, stops: true, wantCancel: true},
		{name: "Ctrl-C ends the REPL turn only", grace: time.Millisecond, turn: true, signals: []os.Signal{os.Interrupt}, stops: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			signals := make(chan os.Signal, len(tc.signals))
			stopped := make(chan struct{})
			cancelled := make(chan struct{}, 4)
			exits := make(chan exitCall, 2)
			interrupted := make(chan struct{}, 1)
			turn := tc.turn
			done := make(chan struct{})
			go func() {
				defer close(done)
				watchSignals(signals, stopped,
					func() bool {
						if turn {
							turn = false
							interrupted <- struct{}{}
							return true
						}
						return false
					},
					func() { cancelled <- struct{}{} },
					tc.grace,
					func(code int, msg string) { exits <- exitCall{code, msg} })
			}()
			for _, s := range tc.signals {
				signals <- s
			}
			if tc.turn {
				<-interrupted
			}
			if tc.stops {
				if tc.wantCancel {
					<-cancelled
				}
				close(stopped)
			}
			<-done
			if got := len(cancelled) > 0 || (tc.wantCancel && tc.stops); got != tc.wantCancel {
				t.Errorf("cancelled = %t, want %t", got, tc.wantCancel)
			}
			select {
			case e := <-exits:
				if tc.wantExit == nil {
					t.Fatalf("forced exit %d (%s), want none", e.code, e.msg)
				}
				if e.code != tc.wantExit.code || e.msg == "" {
					t.Fatalf("forced exit %d (%q), want %d with a message", e.code, e.msg, tc.wantExit.code)
				}
			default:
				if tc.wantExit != nil {
					t.Fatalf("no forced exit, want %d", tc.wantExit.code)
				}
			}
		})
	}
}
