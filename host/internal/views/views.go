// Package views owns the host's read model of its catalog as one session
// sees it: the tool and session views (ToolView, SessionView), their
// per-server cache and the verdicts sessions that see a server alike
// share, the exposed names, the view's summary and the `tools --json`
// report. The host passes in what a view depends on (snapshots, taint
// checks, the session's checks) as plain data; nothing here reaches back
// into the host.
package views

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/internal/secureargs"
	"github.com/agenthost/agenthost/host/internal/taint"
	"github.com/agenthost/agenthost/llmview"
)

// ToolView is one tool as a session sees it: the catalog entry plus the
// session's verdict (a valid tool may still be hidden from this session).
type ToolView struct {
	*mcpconn.CatalogTool
	ExposedName string
	Status      mcpconn.ToolStatus
	Reason      string
}

// SessionView is the tool view of a session over every connected server.
type SessionView struct {
	Servers []*mcpconn.ServerSnapshot
	// Tools per server name, in listing order.
	Tools map[string][]*ToolView
	// Model is what the model is sent: active tools only.
	Model *llmview.View
}

// Binder says whether a binding can fill a secure parameter
// ([bindings.Binder.CanBind]).
type Binder interface {
	CanBind(ctx context.Context, server, tool, param string) bool
}

// Checks are a session's own checks, which its verdicts depend on.
type Checks struct {
	// Key is everything about the session its verdicts depend on (called
	// once per view, and only when a server needs verdicts).
	Key func() Key
	// Binder decides whether required secure parameters can be bound.
	Binder Binder
	// NeverAllowed reports a tool the session can never call, whatever
	// the arguments, with why.
	NeverAllowed func(server string, ct *mcpconn.CatalogTool) (bool, string)
}

// Key is everything about a session its verdicts depend on: its trust
// level (never-allowed) and which session values it has (a binding to a
// session value needs one, whatever it is). Names only, never values.
type Key struct {
	trust   int
	present string // the names of non-empty values, sorted, NUL-separated
}

// NewKey is the key of a session of trust level trust whose non-empty
// values are named present (in any order; present is sorted).
func NewKey(trust int, present []string) Key {
	slices.Sort(present)
	return Key{trust: trust, present: strings.Join(present, "\x00")}
}

// Shared is a host's state that all its sessions share: the exposed names
// of the catalog and the servers' session verdicts, shared by sessions
// that see a server alike. The zero value is ready to use.
type Shared struct {
	// verdicts are servers' session verdicts shared by sessions that see a
	// server alike (see shared)
	verdictsMu sync.Mutex
	verdicts   map[string]*serverVerdicts

	// exposed tool names of the catalog (see syncNames)
	namesMu  sync.Mutex
	namer    *llmview.Namer
	namerGen map[string]uint64 // snapshot generation the namer has seen
	nameGen  map[string]uint64 // bumps when a server's tools' names change
}

// NameGens is a copy of each server's naming generation (it changes
// whenever that server's tools' names change).
func (sh *Shared) NameGens() map[string]uint64 {
	sh.namesMu.Lock()
	defer sh.namesMu.Unlock()
	return maps.Clone(sh.nameGen)
}

// Cache is one session's per-server view cache. The zero value is ready
// to use.
type Cache struct {
	mu      sync.Mutex
	servers map[string]*ServerView
	last    *SessionView
}

// Servers is a copy of the cache's per-server entries.
func (c *Cache) Servers() map[string]*ServerView {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.servers)
}

// View computes what the session may be offered. A tool whose required
// secure parameters cannot be bound in this session, or that the session
// can never be allowed to call, is hidden (with a reason) rather than shown
// and failing. Work is per server and cached: only servers whose tool list
// (or tool names) changed, or all of them after the session's values
// changed (epoch), are evaluated again; the model view is composed of
// per-server parts.
func (c *Cache) View(ctx context.Context, sh *Shared, servers []*mcpconn.ServerSnapshot, taints map[string]*taint.Check, epoch uint64, chk Checks) *SessionView {
	nameGens := sh.syncNames(servers)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers == nil {
		c.servers = map[string]*ServerView{}
	}
	changed := c.last == nil
	var key *Key // computed once, when a server needs verdicts
	var todo []evaluation
	for _, snap := range servers {
		sv := c.servers[snap.Name]
		if sv != nil && sv.snap == snap && sv.epoch == epoch && sv.nameGen == nameGens[snap.Name] && sv.taintGen == taints[snap.Name].Gen {
			continue
		}
		if key == nil {
			k := chk.Key()
			key = &k
		}
		if sv != nil && (sv.epoch != epoch || sv.nameGen != nameGens[snap.Name]) {
			sv = nil // its verdicts were for other values or other names
		}
		todo = append(todo, evaluation{snap: snap, prev: sv})
		changed = true
	}
	eachEvaluation(todo, func(e *evaluation) {
		e.out = sh.shared(ctx, chk, e.snap, *key, epoch, nameGens[e.snap.Name], taints[e.snap.Name], e.prev)
	})
	for _, e := range todo {
		c.servers[e.snap.Name] = e.out
	}
	if !changed {
		return c.last
	}
	v := &SessionView{Servers: servers, Tools: make(map[string][]*ToolView, len(servers))}
	parts := make([]*llmview.View, 0, len(servers))
	for _, snap := range servers {
		sv := c.servers[snap.Name]
		v.Tools[snap.Name] = sv.tools
		parts = append(parts, sv.part)
	}
	v.Model = llmview.Compose(parts)
	c.last = v
	return v
}

// evaluation is one server whose verdicts View computes: its snapshot, the
// session's view of its earlier snapshot (see evaluate), and the result.
type evaluation struct {
	snap *mcpconn.ServerSnapshot
	prev *ServerView
	out  *ServerView
}

// parallelViewTools is how many tools the servers to evaluate must have
// between them before View spreads them over the processors: each
// server's verdicts are independent (the checks are safe for concurrent
// use: sessions evaluate concurrently), and a first view of a large
// catalog is otherwise one core's work while the listing that built it
// used them all.
const parallelViewTools = 512

// eachEvaluation runs do for every evaluation, on up to GOMAXPROCS
// goroutines when they are many tools, else in order.
func eachEvaluation(todo []evaluation, do func(*evaluation)) {
	tools := 0
	for _, e := range todo {
		tools += len(e.snap.Tools)
	}
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	if workers < 2 || tools < parallelViewTools {
		for i := range todo {
			do(&todo[i])
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[workerPanic]
	for range workers {
		wg.Go(func() {
			// A panic goes back to View's caller, as it did in order: in a
			// worker it would end the process, past the recover of an
			// HTTP handler that asked for the view.
			defer func() {
				if v := recover(); v != nil {
					failed.CompareAndSwap(nil, &workerPanic{v})
					next.Store(int64(len(todo))) // the others stop at their next server
				}
			}()
			for i := int(next.Add(1)) - 1; i < len(todo); i = int(next.Add(1)) - 1 {
				do(&todo[i])
			}
		})
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		panic(p.value)
	}
}

// workerPanic is what an evaluation's worker recovered.
type workerPanic struct{ value any }

// ServerView caches one server's verdicts for a session. Its ToolViews are
// never modified once built, so views (and sessions, see shared) share
// them.
type ServerView struct {
	snap     *mcpconn.ServerSnapshot
	epoch    uint64
	nameGen  uint64
	taintGen uint64
	tools    []*ToolView
	// in are the tools' verdicts before the session's own checks (the
	// catalog's, then taint and pinning), by index: a later snapshot whose
	// tools have the same parsed definitions and the same inputs keeps the
	// session verdicts (see evaluate).
	in   []verdictIn
	part *llmview.View // the model's view of this server's active tools
}

// Part is the model's view of the server's active tools.
func (sv *ServerView) Part() *llmview.View { return sv.part }

// verdictIn is a tool's status and reason before the session's checks.
type verdictIn struct {
	status mcpconn.ToolStatus
	reason string
}

// serverVerdicts are the session verdicts of one server snapshot (and
// naming generation), by verdict key.
type serverVerdicts struct {
	snap     *mcpconn.ServerSnapshot
	nameGen  uint64
	taintGen uint64
	byKey    map[Key]*ServerView
}

// maxSharedVerdicts bounds the verdict sets kept per server (distinct trust
// levels and sets of session value names); beyond it sessions evaluate on
// their own.
const maxSharedVerdicts = 64

// shared returns a server's verdicts for the session: those of an earlier
// session that sees the server alike (same snapshot, names, trust level
// and session value names), or a new evaluation that later sessions can
// share. A chat backend's many sessions then evaluate each server once,
// not once each.
//
// prev, when not nil, is the session's view of an earlier snapshot of the
// server under the same values and names (see evaluate).
func (sh *Shared) shared(ctx context.Context, chk Checks, snap *mcpconn.ServerSnapshot, key Key, epoch, nameGen uint64, tc *taint.Check, prev *ServerView) *ServerView {
	sh.verdictsMu.Lock()
	sv := sh.verdicts[snap.Name]
	var shared *ServerView
	if sv != nil && sv.snap == snap && sv.nameGen == nameGen && sv.taintGen == tc.Gen {
		shared = sv.byKey[key]
	}
	sh.verdictsMu.Unlock()
	if shared == nil {
		shared = sh.evaluate(ctx, chk, snap, nameGen, tc, prev)
		sh.verdictsMu.Lock()
		if sh.verdicts == nil {
			sh.verdicts = map[string]*serverVerdicts{}
		}
		sv = sh.verdicts[snap.Name]
		if sv == nil || sv.snap != snap || sv.nameGen != nameGen || sv.taintGen != tc.Gen {
			sv = &serverVerdicts{snap: snap, nameGen: nameGen, taintGen: tc.Gen, byKey: map[Key]*ServerView{}}
			sh.verdicts[snap.Name] = sv
		}
		if len(sv.byKey) < maxSharedVerdicts {
			sv.byKey[key] = shared
		}
		sh.verdictsMu.Unlock()
	}
	// The session's own cache entry records its values epoch; the verdicts
	// themselves are shared and read-only.
	own := *shared
	own.epoch = epoch
	return &own
}

// evaluate computes the session's verdicts for a server snapshot. When prev
// (an earlier snapshot's verdicts for this session, under the same values
// and names) lists the very same parsed definitions in the same order, with
// the same catalog, taint and pinning verdicts (a re-listing in which no
// definition changed), its session verdicts and model view part are reused:
// they depend on nothing else, and the work is then one comparison per tool.
func (sh *Shared) evaluate(ctx context.Context, chk Checks, snap *mcpconn.ServerSnapshot, nameGen uint64, tc *taint.Check, prev *ServerView) *ServerView {
	sv := &ServerView{snap: snap, nameGen: nameGen, taintGen: tc.Gen, in: make([]verdictIn, len(snap.Tools))}
	for i, ct := range snap.Tools {
		in := verdictIn{ct.Status, ct.Reason}
		if tc.Tainted[ct] {
			in = verdictIn{mcpconn.ToolExcluded, taint.Reason}
		}
		if reason := tc.Pinned[ct]; reason != "" && in.status == mcpconn.ToolActive {
			in = verdictIn{mcpconn.ToolHidden, reason}
		}
		sv.in[i] = in
	}
	// The server's ToolViews are allocated together: they live as long as
	// the ServerView.
	tvs := make([]ToolView, len(snap.Tools))
	if sameInputs(prev, snap, sv.in) {
		sv.tools = make([]*ToolView, len(snap.Tools))
		for i, ct := range snap.Tools {
			old := prev.tools[i]
			tvs[i] = ToolView{CatalogTool: ct, Status: old.Status, Reason: old.Reason, ExposedName: old.ExposedName}
			sv.tools[i] = &tvs[i]
		}
		sv.part = prev.part
		return sv
	}
	names := sh.namesOf(snap)
	sv.tools = make([]*ToolView, 0, len(snap.Tools))
	active := make([]llmview.Tool, 0, len(snap.Tools))
	exposed := make(map[llmview.Ref]string, len(snap.Tools))
	for i, ct := range snap.Tools {
		tv := &tvs[i]
		*tv = ToolView{CatalogTool: ct, Status: sv.in[i].status, Reason: sv.in[i].reason, ExposedName: names[i]}
		if tv.Status == mcpconn.ToolActive {
			if missing := unbindable(ctx, chk.Binder, snap, ct); len(missing) > 0 {
				tv.Status = mcpconn.ToolHidden
				tv.Reason = "required secure parameters cannot be bound in this session: " + strings.Join(missing, ", ") +
					" (add a bindings entry for them, or give the session the values its session bindings read: --bind NAME=VALUE; docs/config.md)"
			} else if never, why := chk.NeverAllowed(snap.Name, ct); never {
				tv.Status = mcpconn.ToolHidden
				tv.Reason = "this session can never be allowed to call it: " + why
			}
		}
		if tv.Status == mcpconn.ToolActive && tv.ExposedName != "" {
			ref := llmview.Ref{Server: snap.Name, Tool: ct.Tool.Name}
			active = append(active, llmview.Tool{Ref: ref, Description: ct.Tool.Description, InputSchema: ct.Tool.InputSchema, Parameters: ct.Parameters})
			exposed[ref] = tv.ExposedName
		}
		sv.tools = append(sv.tools, tv)
	}
	sv.part = llmview.Build(active, exposed)
	return sv
}

// sameInputs reports whether prev's verdicts hold for snap: the same parsed
// definitions (the listing reuses a definition whose bytes did not change,
// and with it its model parameters), in the same order, with the same
// verdicts before the session's checks.
func sameInputs(prev *ServerView, snap *mcpconn.ServerSnapshot, in []verdictIn) bool {
	if prev == nil || len(prev.tools) != len(snap.Tools) || len(prev.in) != len(in) {
		return false
	}
	for i, ct := range snap.Tools {
		old := prev.tools[i].CatalogTool
		if old.Tool != ct.Tool || prev.in[i] != in[i] || !sameBytes(old.Parameters, ct.Parameters) {
			return false
		}
	}
	return true
}

// sameBytes reports whether a and b are the same slice (not merely equal
// bytes: a reused definition shares its parameters).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// unbindable lists the tool's required secure parameters that no binding can
// fill for this session.
func unbindable(ctx context.Context, b Binder, snap *mcpconn.ServerSnapshot, ct *mcpconn.CatalogTool) []string {
	var missing []string
	for _, p := range secureargs.Required(snap, ct.Tool) {
		if !b.CanBind(ctx, snap.Name, ct.Tool.Name, p) {
			missing = append(missing, p)
		}
	}
	return missing
}

// syncNames brings the exposed names up to date with the servers'
// snapshots (only servers whose listing changed are renamed) and returns,
// per server, a generation that changes whenever that server's tools'
// names change. Names depend on the catalog only, so all sessions share
// them.
func (sh *Shared) syncNames(servers []*mcpconn.ServerSnapshot) map[string]uint64 {
	sh.namesMu.Lock()
	defer sh.namesMu.Unlock()
	if sh.namer == nil {
		sh.namer = llmview.NewNamer()
		sh.namerGen = map[string]uint64{}
		sh.nameGen = map[string]uint64{}
		tools := 0
		for _, snap := range servers {
			tools += len(snap.Tools)
		}
		sh.namer.Reserve(len(servers), tools)
	}
	for _, snap := range servers {
		if gen, ok := sh.namerGen[snap.Name]; ok && gen == snap.Generation {
			continue
		}
		tools := make([]string, 0, len(snap.Tools))
		for _, ct := range snap.Tools {
			tools = append(tools, ct.Tool.Name)
		}
		for server := range sh.namer.SetServer(snap.Name, tools) {
			sh.nameGen[server]++
		}
		sh.namerGen[snap.Name] = snap.Generation
	}
	gens := make(map[string]uint64, len(servers))
	for _, snap := range servers {
		gens[snap.Name] = sh.nameGen[snap.Name]
	}
	return gens
}

// namesOf returns the exposed names of a snapshot's tools, in order ("" for
// a tool the namer does not know, e.g. from a snapshot already replaced).
func (sh *Shared) namesOf(snap *mcpconn.ServerSnapshot) []string {
	sh.namesMu.Lock()
	defer sh.namesMu.Unlock()
	names := make([]string, len(snap.Tools))
	if sh.namer == nil {
		return names
	}
	for i, ct := range snap.Tools {
		names[i] = sh.namer.Name(llmview.Ref{Server: snap.Name, Tool: ct.Tool.Name})
	}
	return names
}
