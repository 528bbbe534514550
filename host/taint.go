package host

import "maps"

// A server that received secure values can write them into a tool's
// definition (its name, description or inputSchema, as a default or an
// enum member, in any JSON spelling) and send tools/list_changed: the next
// model request would carry them. Such a tool is excluded from every view,
// with a reason that names no value. Masking the value instead would still
// tell the model something (where it sat, how long it was) and leave a
// hostile definition on offer.
//
// The check runs once per server snapshot and redactor version (a new
// listing, or a newly registered value), never per call: sessions share
// it, and calls only look their tool up in its result.

// taintReason is the exclusion reason of a tool whose definition holds a
// protected value.
const taintReason = "its definition (name, description or inputSchema) contains a value the host protects; a server must never put secure values in tool definitions"

// serverTaint is the check of one server snapshot against one redactor
// version.
type serverTaint struct {
	snap    *ServerSnapshot
	version uint64
	tainted map[*CatalogTool]bool // nil when no tool is tainted
	// pinned are the tools pinning hides, with the reason (pinned.go);
	// pinGen is the lock version they were checked against.
	pinned map[*CatalogTool]string
	pinGen uint64
	gen    uint64 // changes when tainted or pinned changes
}

// syncTaint brings the taint check up to date with the servers' snapshots
// and the redactor's values, returning each server's (read-only) check;
// its gen changes whenever the server's set of tainted tools changes.
func (h *Host) syncTaint(servers []*ServerSnapshot) map[string]*serverTaint {
	version := h.redactor.Version()
	out := make(map[string]*serverTaint, len(servers))
	for _, snap := range servers {
		out[snap.Name] = h.taintOf(snap, version)
	}
	return out
}

// toolTainted reports whether ct, a tool of snap, is tainted. In the
// steady state it takes no lock: one atomic load and two map reads.
func (h *Host) toolTainted(snap *ServerSnapshot, ct *CatalogTool) bool {
	version := h.redactor.Version()
	if version == 0 {
		return false
	}
	return h.taintOf(snap, version).tainted[ct]
}

// taintOf returns the check of snap under version, running it when the
// snapshot or the values changed since the last one.
func (h *Host) taintOf(snap *ServerSnapshot, version uint64) *serverTaint {
	pinGen := h.pins.Gen(h.logger)
	if st := h.currentTaint(snap.Name); st != nil && st.snap == snap && st.version == version && st.pinGen == pinGen {
		return st
	}
	h.taintMu.Lock()
	defer h.taintMu.Unlock()
	st := h.currentTaint(snap.Name)
	if st != nil && st.snap == snap && st.version == version && st.pinGen == pinGen {
		return st // another goroutine ran it meanwhile
	}
	next := &serverTaint{snap: snap, version: version, tainted: h.taintedTools(snap, version), pinned: h.pins.Hidden(snap), pinGen: pinGen}
	switch {
	case st == nil:
		next.gen = 1
	case st.snap == snap && maps.Equal(st.tainted, next.tainted) && maps.Equal(st.pinned, next.pinned):
		next.gen = st.gen
	default:
		next.gen = st.gen + 1
	}
	h.taint.Store(snap.Name, next)
	return next
}

// currentTaint is the latest check of a server (nil before the first).
func (h *Host) currentTaint(server string) *serverTaint {
	if v, ok := h.taint.Load(server); ok {
		return v.(*serverTaint)
	}
	return nil
}

// taintedTools checks every definition of snap against the redactor's
// values as of version. A definition's answer is kept with it (its memo,
// carried to the next listing while its bytes are unchanged), so a
// re-listing checks only the definitions that changed, until a value is
// added.
func (h *Host) taintedTools(snap *ServerSnapshot, version uint64) map[*CatalogTool]bool {
	r := h.redactor
	if r.Len() == 0 {
		return nil
	}
	var tainted map[*CatalogTool]bool
	for _, ct := range snap.Tools {
		if h.definitionTainted(ct, version) {
			if tainted == nil {
				tainted = map[*CatalogTool]bool{}
			}
			tainted[ct] = true
		}
	}
	return tainted
}

// taintAnswer is a definition's taint check at one redactor version.
type taintAnswer struct {
	version uint64
	tainted bool
}

// definitionTainted reports whether ct's name, title, description or
// inputSchema holds a protected value. version was read before the check:
// a value added meanwhile changes the version, so the answer is never
// reused for it.
func (h *Host) definitionTainted(ct *CatalogTool, version uint64) bool {
	v := verdictsOf(ct)
	if v != nil {
		if a := v.taint.Load(); a != nil && a.version == version {
			return a.tainted
		}
	}
	r, t := h.redactor, ct.Tool
	tainted := r.ContainsSecret(t.Name) || r.ContainsSecret(t.Title) || r.ContainsSecret(t.Description) || r.ContainsSecretBytes(t.InputSchema)
	if v != nil {
		v.taint.Store(&taintAnswer{version: version, tainted: tainted})
	}
	return tainted
}
