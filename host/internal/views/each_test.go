package views

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

// manyTools is an evaluation list large enough for eachEvaluation to
// spread it over the processors.
func manyTools(servers int) []evaluation {
	todo := make([]evaluation, servers)
	for i := range todo {
		todo[i].snap = &mcpconn.ServerSnapshot{Name: string(rune('a' + i)), Tools: make([]*mcpconn.CatalogTool, parallelViewTools)}
	}
	return todo
}

func TestEachEvaluationRunsEveryOne(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, servers := range []int{1, 2, 9} {
		todo := manyTools(servers)
		var runs atomic.Int64
		eachEvaluation(todo, func(e *evaluation) {
			runs.Add(1)
			e.out = &ServerView{}
		})
		if runs.Load() != int64(servers) {
			t.Errorf("%d servers: %d runs", servers, runs.Load())
		}
		for i, e := range todo {
			if e.out == nil {
				t.Errorf("%d servers: evaluation %d not run", servers, i)
			}
		}
	}
}

// TestEachEvaluationPanicReachesTheCaller: a panic in a worker comes back
// to the goroutine that asked for the view (whose HTTP handler recovers
// it), as it did when the servers were evaluated in order; in the worker
// it would end the process.
func TestEachEvaluationPanicReachesTheCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	got := func() (v any) {
		defer func() { v = recover() }()
		eachEvaluation(manyTools(6), func(e *evaluation) {
			if e.snap.Name == "c" {
				panic("boom")
			}
		})
		return nil
	}()
	if got != "boom" {
		t.Fatalf("recovered %v, want the worker's panic", got)
	}
}
