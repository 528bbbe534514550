package eventlog

import (
	"strconv"
	"strings"
	"testing"
)

func frameOf(n int) []byte { return []byte(strings.Repeat("x", n)) }

// TestEventLogBounds: a log drops its oldest events past MaxTurnEvents
// and past the session's bytes (never its newest); past the total, logs of
// ended turns lose theirs first (the longest ended first), then the log
// adding drops its own oldest; a released log no longer counts.
func TestEventLogBounds(t *testing.T) {
	type step struct {
		log    int  // which log (0, 1, 2)
		frame  int  // append a frame of this size, unless
		finish bool // finish the log
		free   bool // release the log
	}
	tests := []struct {
		name      string
		lim       Limits
		steps     []step
		wantFirst []int64 // each log's first kept event number
		wantKept  []int   // each log's kept events
		wantUsed  int64
	}{
		{"session bound drops the oldest", Limits{MaxSession: 1000, MaxTotal: 1 << 20},
			[]step{{0, 400, false, false}, {0, 400, false, false}, {0, 400, false, false}},
			[]int64{3, 1, 1}, []int{1, 0, 0}, 400},
		{"the newest is kept even alone past the bound", Limits{MaxSession: 1000, MaxTotal: 1 << 20},
			[]step{{0, 100, false, false}, {0, 5000, false, false}},
			[]int64{2, 1, 1}, []int{1, 0, 0}, 5000},
		{"total takes from ended turns first, longest ended first", Limits{MaxSession: 2000, MaxTotal: 2000},
			[]step{{0, 600, false, false}, {0, 0, true, false}, {1, 600, false, false}, {1, 0, true, false}, {2, 600, false, false}, {2, 600, false, false}},
			[]int64{2, 1, 1}, []int{0, 1, 2}, 1800},
		{"then the turn adding drops its own", Limits{MaxSession: 1500, MaxTotal: 1500},
			[]step{{0, 700, false, false}, {1, 700, false, false}, {1, 700, false, false}},
			[]int64{1, 2, 1}, []int{1, 1, 0}, 1400},
		{"a released log no longer counts", Limits{MaxSession: 1000, MaxTotal: 1000},
			[]step{{0, 900, false, false}, {0, 0, true, false}, {0, 0, false, true}, {1, 900, false, false}},
			[]int64{1, 1, 1}, []int{1, 1, 0}, 900},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(tc.lim)
			logs := []*Log{b.NewLog(), b.NewLog(), b.NewLog()}
			for _, st := range tc.steps {
				switch l := logs[st.log]; {
				case st.finish:
					l.Finish()
				case st.free:
					l.Release()
				default:
					l.Append(frameOf(st.frame))
				}
			}
			for i, l := range logs {
				if l.first != tc.wantFirst[i] || len(l.events) != tc.wantKept[i] {
					t.Errorf("log %d keeps %d events from %d, want %d from %d", i, len(l.events), l.first, tc.wantKept[i], tc.wantFirst[i])
				}
			}
			if got := b.used.Load(); got != tc.wantUsed {
				t.Errorf("budget counts %d bytes, want %d", got, tc.wantUsed)
			}
		})
	}
}

// TestEventLogCountBound: past MaxTurnEvents the oldest are dropped; a
// reader behind them learns so, and a slice handed out is never changed.
func TestEventLogCountBound(t *testing.T) {
	l := NewBudget(Limits{MaxSession: 1 << 30, MaxTotal: 1 << 30}).NewLog()
	for i := 1; i <= MaxTurnEvents; i++ {
		l.Append([]byte(strconv.Itoa(i)))
	}
	held, _, _, _, _ := l.Since(0)
	l.Append([]byte(strconv.Itoa(MaxTurnEvents + 1)))
	if string(held[0]) != "1" || len(held) != MaxTurnEvents {
		t.Fatalf("a slice handed to a reader changed: it starts %q, holds %d", held[0], len(held))
	}
	if _, _, _, _, gone := l.Since(0); !gone {
		t.Fatal("a reader behind dropped events was not told")
	}
	evs, first, _, _, gone := l.Since(l.first - 1)
	if gone || first != MaxTurnEvents/4+2 || string(evs[len(evs)-1]) != strconv.Itoa(MaxTurnEvents+1) {
		t.Fatalf("after the drop: first %d, gone %v, last %q", first, gone, evs[len(evs)-1])
	}
}

// A reader that waits is woken by the next event and by the end of the
// turn; a reader with events to take is given no channel.
func TestEventLogWakesWaitingReaders(t *testing.T) {
	tests := []struct {
		name   string
		change func(l *Log)
		done   bool
	}{
		{"append", func(l *Log) { l.Append([]byte("id: 2\nevent: assistant\ndata: {}\n\n")) }, false},
		{"finish", (*Log).Finish, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := New()
			l.Append([]byte("id: 1\nevent: session_start\ndata: {}\n\n"))
			if evs, _, _, changed, _ := l.Since(0); len(evs) != 1 || changed != nil {
				t.Fatalf("since(0): %d events, channel %v; want 1 and none", len(evs), changed)
			}
			if l.Waiting() {
				t.Fatal("a reader that took events counts as waiting")
			}
			_, _, _, changed, _ := l.Since(1)
			if changed == nil || !l.Waiting() {
				t.Fatal("a caught-up reader got no channel to wait on")
			}
			tc.change(l)
			<-changed // closed by the change
			if l.Waiting() {
				t.Fatal("the change left a channel nobody asked for")
			}
			if _, _, done, _, _ := l.Since(1); done != tc.done {
				t.Fatalf("done %v, want %v", done, tc.done)
			}
		})
	}
}
