package host

import (
	"context"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/internal/secureargs"
	"github.com/agenthost/agenthost/host/internal/taint"
	"github.com/agenthost/agenthost/llmview"
)

// ToolView is one tool as a session sees it: the catalog entry plus the
// session's verdict (a valid tool may still be hidden from this session).
type ToolView struct {
	*CatalogTool
	ExposedName string
	Status      ToolStatus
	Reason      string
}

// SessionView is the tool view of a session over every connected server.
type SessionView struct {
	Servers []*ServerSnapshot
	// Tools per server name, in listing order.
	Tools map[string][]*ToolView
	// Model is what the model is sent: active tools only.
	Model *llmview.View
}

// View computes what this session may be offered. A tool whose required
// secure parameters cannot be bound in this session, or that the session
// can never be allowed to call, is hidden (with a reason) rather than shown
// and failing. Work is per server and cached: only servers whose tool list
// (or tool names) changed, or all of them after the session's values
// changed, are evaluated again; the model view is composed of per-server
// parts.
func (s *Session) View(ctx context.Context) *SessionView {
	ctx = s.bindingContext(ctx)
	h := s.host
	servers := h.Servers()
	nameGens := h.syncNames(servers)
	taints := h.taint.Sync(servers)
	epoch := s.valuesEpoch.Load()

	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if s.viewCache == nil {
		s.viewCache = map[string]*serverView{}
	}
	changed := s.lastView == nil
	var key *verdictKey // computed once, when a server needs verdicts
	for _, snap := range servers {
		sv := s.viewCache[snap.Name]
		if sv != nil && sv.snap == snap && sv.epoch == epoch && sv.nameGen == nameGens[snap.Name] && sv.taintGen == taints[snap.Name].Gen {
			continue
		}
		if key == nil {
			k := s.verdictKey()
			key = &k
		}
		if sv != nil && (sv.epoch != epoch || sv.nameGen != nameGens[snap.Name]) {
			sv = nil // its verdicts were for other values or other names
		}
		s.viewCache[snap.Name] = s.sharedServerView(ctx, snap, *key, epoch, nameGens[snap.Name], taints[snap.Name], sv)
		changed = true
	}
	if !changed {
		return s.lastView
	}
	v := &SessionView{Servers: servers, Tools: make(map[string][]*ToolView, len(servers))}
	parts := make([]*llmview.View, 0, len(servers))
	for _, snap := range servers {
		sv := s.viewCache[snap.Name]
		v.Tools[snap.Name] = sv.tools
		parts = append(parts, sv.part)
	}
	v.Model = llmview.Compose(parts)
	s.lastView = v
	return v
}

// serverView caches one server's verdicts for a session. Its ToolViews are
// never modified once built, so views (and sessions, see sharedServerView)
// share them.
type serverView struct {
	snap     *ServerSnapshot
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

// verdictIn is a tool's status and reason before the session's checks.
type verdictIn struct {
	status ToolStatus
	reason string
}

// verdictKey is everything about a session its verdicts depend on: its
// trust level (never-allowed) and which session values it has (a binding to
// a session value needs one, whatever it is). Names only, never values.
type verdictKey struct {
	trust   int
	present string // the names of non-empty values, sorted, NUL-separated
}

func (s *Session) verdictKey() verdictKey {
	s.mu.RLock()
	names := make([]string, 0, len(s.values))
	for name, v := range s.values {
		if v != "" {
			names = append(names, name)
		}
	}
	s.mu.RUnlock()
	slices.Sort(names)
	return verdictKey{trust: s.trustLevel, present: strings.Join(names, "\x00")}
}

// serverVerdicts are the session verdicts of one server snapshot (and
// naming generation), by verdict key.
type serverVerdicts struct {
	snap     *ServerSnapshot
	nameGen  uint64
	taintGen uint64
	byKey    map[verdictKey]*serverView
}

// maxSharedVerdicts bounds the verdict sets kept per server (distinct trust
// levels and sets of session value names); beyond it sessions evaluate on
// their own.
const maxSharedVerdicts = 64

// sharedServerView returns a server's verdicts for the session: those of
// an earlier session that sees the server alike (same snapshot, names,
// trust level and session value names), or a new evaluation that later
// sessions can share. A chat backend's many sessions then evaluate each
// server once, not once each.
//
// prev, when not nil, is the session's view of an earlier snapshot of the
// server under the same values and names (see evaluate).
func (s *Session) sharedServerView(ctx context.Context, snap *ServerSnapshot, key verdictKey, epoch, nameGen uint64, chk *taint.Check, prev *serverView) *serverView {
	h := s.host
	h.verdictsMu.Lock()
	sv := h.verdicts[snap.Name]
	var shared *serverView
	if sv != nil && sv.snap == snap && sv.nameGen == nameGen && sv.taintGen == chk.Gen {
		shared = sv.byKey[key]
	}
	h.verdictsMu.Unlock()
	if shared == nil {
		shared = s.evaluate(ctx, snap, nameGen, chk, prev)
		h.verdictsMu.Lock()
		if h.verdicts == nil {
			h.verdicts = map[string]*serverVerdicts{}
		}
		sv = h.verdicts[snap.Name]
		if sv == nil || sv.snap != snap || sv.nameGen != nameGen || sv.taintGen != chk.Gen {
			sv = &serverVerdicts{snap: snap, nameGen: nameGen, taintGen: chk.Gen, byKey: map[verdictKey]*serverView{}}
			h.verdicts[snap.Name] = sv
		}
		if len(sv.byKey) < maxSharedVerdicts {
			sv.byKey[key] = shared
		}
		h.verdictsMu.Unlock()
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
func (s *Session) evaluate(ctx context.Context, snap *ServerSnapshot, nameGen uint64, chk *taint.Check, prev *serverView) *serverView {
	sv := &serverView{snap: snap, nameGen: nameGen, taintGen: chk.Gen, in: make([]verdictIn, len(snap.Tools))}
	for i, ct := range snap.Tools {
		in := verdictIn{ct.Status, ct.Reason}
		if chk.Tainted[ct] {
			in = verdictIn{ToolExcluded, taint.Reason}
		}
		if reason := chk.Pinned[ct]; reason != "" && in.status == ToolActive {
			in = verdictIn{ToolHidden, reason}
		}
		sv.in[i] = in
	}
	if sameInputs(prev, snap, sv.in) {
		sv.tools = make([]*ToolView, len(snap.Tools))
		for i, ct := range snap.Tools {
			old := prev.tools[i]
			sv.tools[i] = &ToolView{CatalogTool: ct, Status: old.Status, Reason: old.Reason, ExposedName: old.ExposedName}
		}
		sv.part = prev.part
		return sv
	}
	names := s.host.namesOf(snap)
	sv.tools = make([]*ToolView, 0, len(snap.Tools))
	var active []llmview.Tool
	exposed := map[llmview.Ref]string{}
	for i, ct := range snap.Tools {
		tv := &ToolView{CatalogTool: ct, Status: sv.in[i].status, Reason: sv.in[i].reason, ExposedName: names[i]}
		if tv.Status == ToolActive {
			if missing := s.unbindable(ctx, snap, ct); len(missing) > 0 {
				tv.Status = ToolHidden
				tv.Reason = "required secure parameters cannot be bound in this session: " + strings.Join(missing, ", ") +
					" (add a bindings entry for them, or give the session the values its session bindings read: --bind NAME=VALUE; docs/config.md)"
			} else if never, why := s.neverAllowed(snap.Name, ct); never {
				tv.Status = ToolHidden
				tv.Reason = "this session can never be allowed to call it: " + why
			}
		}
		if tv.Status == ToolActive && tv.ExposedName != "" {
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
func sameInputs(prev *serverView, snap *ServerSnapshot, in []verdictIn) bool {
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
func (s *Session) unbindable(ctx context.Context, snap *ServerSnapshot, ct *CatalogTool) []string {
	var missing []string
	for _, p := range secureargs.Required(snap, ct.Tool) {
		if !s.host.binder.CanBind(ctx, snap.Name, ct.Tool.Name, p) {
			missing = append(missing, p)
		}
	}
	return missing
}

// syncNames brings the host's exposed names up to date with the servers'
// snapshots (only servers whose listing changed are renamed) and returns,
// per server, a generation that changes whenever that server's tools'
// names change. Names depend on the catalog only, so all sessions share
// them.
func (h *Host) syncNames(servers []*ServerSnapshot) map[string]uint64 {
	h.namesMu.Lock()
	defer h.namesMu.Unlock()
	if h.namer == nil {
		h.namer = llmview.NewNamer()
		h.namerGen = map[string]uint64{}
		h.nameGen = map[string]uint64{}
	}
	for _, snap := range servers {
		if gen, ok := h.namerGen[snap.Name]; ok && gen == snap.Generation {
			continue
		}
		tools := make([]string, 0, len(snap.Tools))
		for _, ct := range snap.Tools {
			tools = append(tools, ct.Tool.Name)
		}
		for server := range h.namer.SetServer(snap.Name, tools) {
			h.nameGen[server]++
		}
		h.namerGen[snap.Name] = snap.Generation
	}
	gens := make(map[string]uint64, len(servers))
	for _, snap := range servers {
		gens[snap.Name] = h.nameGen[snap.Name]
	}
	return gens
}

// namesOf returns the exposed names of a snapshot's tools, in order ("" for
// a tool the namer does not know, e.g. from a snapshot already replaced).
func (h *Host) namesOf(snap *ServerSnapshot) []string {
	h.namesMu.Lock()
	defer h.namesMu.Unlock()
	names := make([]string, len(snap.Tools))
	if h.namer == nil {
		return names
	}
	for i, ct := range snap.Tools {
		names[i] = h.namer.Name(llmview.Ref{Server: snap.Name, Tool: ct.Tool.Name})
	}
	return names
}
