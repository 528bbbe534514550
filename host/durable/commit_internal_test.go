package durable

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// Which checkpoints wait for the WAL flush is a rule of its own
// (commit.go): a model answer decides calls and must never be asked again,
// a call's outcome is covered by the flushed send ledger.
func TestLazyStepsAreTheOnesALaterFlushCovers(t *testing.T) {
	for _, tt := range []struct {
		name string
		lazy bool
	}{{"tool", true}, {"load", true}, {"model", false}, {"anything else", false}} {
		if got := lazyStep(tt.name); got != tt.lazy {
			t.Errorf("lazyStep(%q) = %v, want %v", tt.name, got, tt.lazy)
		}
	}
}

// The pool's hook sets each connection's synchronous_commit to what the
// acquiring context asks, and a step's work (its send ledger row) is
// flushed again inside a lazy step.
func TestCommitModeFollowsTheContext(t *testing.T) {
	c := pgtest.Start(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	toolStep, tool := stepContext(ctx, "tool")
	modelStep, model := stepContext(ctx, "model")
	for _, tt := range []struct {
		name string
		ctx  context.Context
		then func() // after the connection was prepared
		want string
	}{
		{"plain", ctx, nil, "on"},
		{"lazy", lazyCommits(ctx), nil, "off"},
		{"lazy again", lazyCommits(ctx), nil, "off"},
		{"flushed inside a lazy step", flushedCommits(lazyCommits(ctx)), nil, "on"},
		{"lazy after flushed", lazyCommits(ctx), nil, "off"},
		{"a read keeps it", anyCommits(ctx), nil, "off"},
		{"plain after lazy", ctx, nil, "on"},
		{"a read keeps it on", anyCommits(ctx), nil, "on"},
		// A step's lookup of its checkpoint is a read; its record is
		// written in the step's mode; its work is flushed.
		{"a lazy step's lookup", toolStep, func() { tool.recording.Store(true) }, "on"},
		{"a lazy step's work", flushedCommits(toolStep), nil, "on"},
		{"a lazy step's record", toolStep, nil, "off"},
		{"a flushed step's lookup", modelStep, func() { model.recording.Store(true) }, "off"},
		{"a flushed step's record", modelStep, nil, "on"},
	} {
		if ok, err := prepareCommitMode(tt.ctx, conn); !ok || err != nil {
			t.Fatalf("%s: prepareCommitMode = %v, %v", tt.name, ok, err)
		}
		if got := showSyncCommit(t, conn); got != tt.want {
			t.Errorf("%s: synchronous_commit = %s, want %s", tt.name, got, tt.want)
		}
		if tt.then != nil {
			tt.then()
		}
	}
}

// Through the engine: a tool step's and the load step's checkpoints and a
// turn's appends are written on a connection with synchronous_commit off,
// a model step's never, the send ledger's row inside the tool step with it
// on, and an append outside a turn with it on.
func TestToolCheckpointsDoNotWaitForTheFlush(t *testing.T) {
	ctx := context.Background()
	rec := &commitRecorder{lazy: map[string]bool{}}
	e := openTraced(t, rec) // prepare_internal_test.go
	step := func(ctx context.Context, steps host.Steps, name string, fn host.StepFunc) error {
		_, _, err := steps.Step(ctx, name, fn)
		return err
	}
	empty := func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
	msg := model.Message{Role: model.RoleUser, Content: "hello"}
	if err := e.Store().AppendAt(ctx, "outside", 0, msg); err != nil { // not in a turn: flushed
		t.Fatal(err)
	}
	if err := e.Start(func(ctx context.Context, steps host.Steps, _ host.TurnRecord) error {
		for _, run := range []func() error{
			func() error { return step(ctx, steps, "load", empty) },
			func() error { return e.Store().AppendAt(ctx, "s", 0, msg) },
			func() error { return step(ctx, steps, "model", empty) },
			func() error { // a call's step, started as the host starts them
				ch, err := steps.Go(ctx, "tool", func(ctx context.Context) (json.RawMessage, error) {
					if _, err := steps.Sent(ctx, steps.TurnID()+"/call_1"); err != nil {
						return nil, err
					}
					return json.RawMessage(`{}`), nil
				})
				if err != nil {
					return err
				}
				return (<-ch).Err
			},
		} {
			if err := run(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.RunTurn(ctx, "s.0000000000000001.00000001", host.TurnRecord{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, tt := range []struct {
		write string
		lazy  bool
	}{{"step load", true}, {"step model", false}, {"step tool", true}, {"send ledger", false}, {"index row", true}, {"index drop", true},
		{"append in a turn", true}, {"append outside a turn", false}} {
		lazy, ok := rec.lazy[tt.write]
		if !ok {
			t.Errorf("no %s was written", tt.write)
		} else if lazy != tt.lazy {
			t.Errorf("%s: written with synchronous_commit off = %v, want %v", tt.write, lazy, tt.lazy)
		}
	}
	for write := range rec.lazy {
		if strings.Contains(write, "engine's pool") {
			t.Errorf("%s", write)
		}
	}
	t.Logf("%d SET synchronous_commit round trips in the turn", rec.sets)
}

// commitRecorder notes, for each checkpoint and send ledger row written,
// whether its connection was prepared for lazy commits.
type commitRecorder struct {
	mu   sync.Mutex
	lazy map[string]bool
	sets int // SET synchronous_commit round trips
}

func (r *commitRecorder) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	var write string
	switch {
	case strings.Contains(data.SQL, "INSERT INTO") && strings.Contains(data.SQL, "operation_outputs") && len(data.Args) > 4:
		name, _ := data.Args[4].(string)
		write = "step " + name
	case strings.Contains(data.SQL, "INSERT INTO agenthost_call_sends"):
		write = "send ledger"
	case strings.Contains(data.SQL, "INSERT INTO agenthost_turns"):
		write = "index row"
	case strings.Contains(data.SQL, "DELETE FROM agenthost_turns WHERE turn_id"):
		write = "index drop"
	case strings.Contains(data.SQL, "INSERT INTO agenthost_messages") && len(data.Args) > 0:
		write = "append outside a turn"
		if data.Args[0] == "s" {
			write = "append in a turn"
		}
	case strings.HasPrefix(data.SQL, "SET synchronous_commit"):
		r.mu.Lock()
		r.sets++
		r.mu.Unlock()
		return ctx
	default:
		return ctx
	}
	lazy, _ := conn.PgConn().CustomData()[syncCommitData].(bool)
	if (strings.HasPrefix(write, "index") || write == "append in a turn") && conn.Config().RuntimeParams["synchronous_commit"] != "off" {
		// The index's rows and a turn's appends go through the pool
		// opened lazy, so that the engine's connections do not switch
		// modes for them.
		write += " (on a connection of the engine's pool)"
	}
	r.mu.Lock()
	r.lazy[write] = lazy
	r.mu.Unlock()
	return ctx
}

func (r *commitRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func showSyncCommit(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var v string
	if err := conn.QueryRow(context.Background(), "SHOW synchronous_commit").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
