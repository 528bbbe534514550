package durableturn

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// ledger is a TaskSteps of one call's sends and tasks.
type ledger struct {
	Steps
	sent     int
	sentErr  error
	tasks    map[string]string
	taskErr  error
	recorded []string
	reads    int
}

func (l *ledger) Sent(context.Context, string) (int, error) {
	if l.sentErr != nil {
		return 0, l.sentErr
	}
	l.sent++
	return l.sent - 1, nil
}

func (l *ledger) TaskOf(_ context.Context, key string) (string, error) {
	l.reads++
	return l.tasks[key], l.taskErr
}

func (l *ledger) SentTask(_ context.Context, key, taskID string) error {
	if l.taskErr != nil {
		return l.taskErr
	}
	l.recorded = append(l.recorded, key+"="+taskID)
	return nil
}

// sendsOnly is a Steps that keeps no tasks.
type sendsOnly struct{ Steps }

func (sendsOnly) Sent(context.Context, string) (int, error) { return 1, nil }

func TestLedger(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		l         *ledger
		prior     int
		task      string
		taskErr   error
		sentErr   error
		wantReads int
	}{
		{name: "first send: no task read", l: &ledger{}},
		{name: "sent before: its task", l: &ledger{sent: 1, tasks: map[string]string{"k": "t1"}}, prior: 1, task: "t1", wantReads: 1},
		{name: "sent before, the task unreadable", l: &ledger{sent: 1, taskErr: boom}, prior: 1, taskErr: boom, wantReads: 1},
		{name: "not recorded: no task read", l: &ledger{sent: 1, sentErr: boom}, sentErr: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prior, task, taskErr, sentErr := (&ToolCall{Key: "k", Steps: tc.l}).Ledger(context.Background())
			if prior != tc.prior || task != tc.task || !errors.Is(taskErr, tc.taskErr) || !errors.Is(sentErr, tc.sentErr) || tc.l.reads != tc.wantReads {
				t.Fatalf("Ledger = %d, %q, %v, %v (%d reads); want %d, %q, %v, %v (%d)",
					prior, task, taskErr, sentErr, tc.l.reads, tc.prior, tc.task, tc.taskErr, tc.sentErr, tc.wantReads)
			}
		})
	}
	if prior, task, taskErr, sentErr := (&ToolCall{Key: "k", Steps: sendsOnly{}}).Ledger(context.Background()); prior != 1 || task != "" || taskErr != nil || sentErr != nil {
		t.Errorf("Steps without tasks: %d, %q, %v, %v", prior, task, taskErr, sentErr)
	}
}

// secretSet holds the protected values of a test.
type secretSet []string

func (s secretSet) ContainsSecret(v string) bool {
	for _, x := range s {
		if strings.Contains(v, x) {
			return true
		}
	}
	return false
}

func TestRecordTask(t *testing.T) {
	boom := errors.New("store down")
	for _, tc := range []struct {
		name     string
		l        *ledger
		known    string // the call's task before
		taskID   string
		recorded []string
		task     string // the call's task after
		log      string
	}{
		{name: "a new task", l: &ledger{}, taskID: "t1", recorded: []string{"k=t1"}, task: "t1"},
		{name: "the task it follows", l: &ledger{}, known: "t1", taskID: "t1", task: "t1"},
		{name: "a protected value", l: &ledger{}, taskID: "t-hunter2", log: "holds a protected value"},
		{name: "the store failed", l: &ledger{taskErr: boom}, taskID: "t1", log: "could not be recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			tc2 := &ToolCall{Key: "k", Steps: tc.l, Task: tc.known}
			tc2.RecordTask(context.Background(), tc.taskID, secretSet{"hunter2"}, slog.New(slog.NewTextHandler(&logs, nil)))
			if strings.Join(tc.l.recorded, ",") != strings.Join(tc.recorded, ",") || tc2.Task != tc.task {
				t.Fatalf("recorded %q, task %q; want %q, %q", tc.l.recorded, tc2.Task, tc.recorded, tc.task)
			}
			if (tc.log == "") != (logs.Len() == 0) || !strings.Contains(logs.String(), tc.log) {
				t.Errorf("logged %q, want %q", logs.String(), tc.log)
			}
			if strings.Contains(logs.String(), "hunter2") {
				t.Errorf("the log names the protected value: %s", logs.String())
			}
		})
	}
	tc := &ToolCall{Key: "k", Steps: sendsOnly{}}
	tc.RecordTask(context.Background(), "t1", secretSet{}, slog.New(slog.DiscardHandler))
	if tc.Task != "" {
		t.Errorf("Steps without tasks kept task %q", tc.Task)
	}
}
