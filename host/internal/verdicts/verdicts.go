// Package verdicts owns the host's answers about one parsed tool
// definition, computed once on first use: its effective risk metadata,
// whether a session of a trust level can ever call it, whether it holds a
// protected value, and its compiled inputSchema. They live on the
// definition's CatalogTool and are carried over to the next listing only
// while the definition's bytes are unchanged, so they die with the
// definition: a server that keeps changing its tools does not grow the
// host.
package verdicts

import (
	"sync/atomic"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/argschema"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

// verdicts are the answers about one definition.
type verdicts struct {
	risk atomic.Pointer[risk.Effective]
	// never is whether a session of trust level i can ever call the tool:
	// it depends on the definition and the trust level only, so sessions
	// share it.
	never [risk.MaxTrust + 1]atomic.Pointer[neverAnswer]
	// taint is whether the definition holds a protected value, as of a
	// redactor version (see Tainted).
	taint atomic.Pointer[TaintAnswer]
	// input is the compiled inputSchema (package argschema).
	input atomic.Pointer[argschema.Compiled]
}

type neverAnswer struct {
	never bool
	why   string
}

// TaintAnswer is a definition's taint check at one redactor version.
type TaintAnswer struct {
	Version uint64
	Tainted bool
}

// of is the tool's verdicts, nil for a CatalogTool built outside a
// listing (no memo).
func of(ct *mcpconn.CatalogTool) *verdicts {
	m := mcpconn.MemoOf(ct)
	if m == nil {
		return nil
	}
	return m.Load(newVerdicts).(*verdicts)
}

func newVerdicts() any { return &verdicts{} }

// ToolInfo is what the approvals package needs of a tool.
func ToolInfo(ct *mcpconn.CatalogTool) risk.ToolInfo {
	return risk.ToolInfo{
		Name:        ct.Tool.Name,
		Description: ct.Tool.Description,
		InputSchema: ct.Tool.InputSchema,
		Annotations: ct.Tool.Annotations,
		Meta:        ct.Tool.Meta,
	}
}

// Input is where ct's compiled inputSchema is kept, nil for a CatalogTool
// built outside a listing.
func Input(ct *mcpconn.CatalogTool) *atomic.Pointer[argschema.Compiled] {
	if v := of(ct); v != nil {
		return &v.input
	}
	return nil
}

// Effective is the tool's effective risk metadata under p (trusted: the
// operator takes the server's declared risk metadata as-is), computed once
// per parsed definition.
func Effective(p *rules.Policy, server string, trusted bool, ct *mcpconn.CatalogTool) risk.Effective {
	v := of(ct)
	if v != nil {
		if eff := v.risk.Load(); eff != nil {
			return *eff
		}
	}
	eff := p.Effective(server, trusted, ToolInfo(ct))
	if v != nil {
		v.risk.Store(&eff)
	}
	return eff
}

// NeverAllowed reports whether a session of trustLevel can never call the
// tool, whatever the arguments (and why), computed once per definition and
// trust level; eff is the tool's effective metadata.
func NeverAllowed(p *rules.Policy, server string, ct *mcpconn.CatalogTool, eff func() risk.Effective, trustLevel int) (bool, string) {
	var slot *atomic.Pointer[neverAnswer]
	if v := of(ct); v != nil && trustLevel >= 0 && trustLevel < len(v.never) {
		slot = &v.never[trustLevel]
		if n := slot.Load(); n != nil {
			return n.never, n.why
		}
	}
	never, why := p.NeverAllowed(server, ct.Tool.Name, eff(), trustLevel)
	if slot != nil {
		slot.Store(&neverAnswer{never, why})
	}
	return never, why
}

// Taint is ct's last taint check (nil before the first).
func Taint(ct *mcpconn.CatalogTool) *TaintAnswer {
	if v := of(ct); v != nil {
		return v.taint.Load()
	}
	return nil
}

// Tainted reports whether ct's name, title, description or inputSchema
// holds a value r protects. version was read before the check: a value
// added meanwhile changes the version, so the answer is never reused for
// it.
func Tainted(r *bindings.Redactor, ct *mcpconn.CatalogTool, version uint64) bool {
	v := of(ct)
	if v != nil {
		if a := v.taint.Load(); a != nil && a.Version == version {
			return a.Tainted
		}
	}
	t := ct.Tool
	tainted := r.ContainsSecret(t.Name) || r.ContainsSecret(t.Title) || r.ContainsSecret(t.Description) || r.ContainsSecretBytes(t.InputSchema)
	if v != nil {
		v.taint.Store(&TaintAnswer{Version: version, Tainted: tainted})
	}
	return tainted
}
