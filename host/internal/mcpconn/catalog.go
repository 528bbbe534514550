package mcpconn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
	"github.com/agenthost/agenthost/host/secureparams"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/internal/glob"
	"github.com/agenthost/agenthost/llmview"
)

// ServerStatus is the state of one server connection.
type ServerStatus string

// Server states.
const (
	StatusConnecting ServerStatus = "connecting"
	StatusConnected  ServerStatus = "connected"
	StatusError      ServerStatus = "error"
	StatusDisabled   ServerStatus = "disabled"
)

// ToolStatus says whether a tool is offered to the model.
type ToolStatus string

// Tool states (`tools --json`, docs/cli.md).
const (
	ToolActive   ToolStatus = "active"   // in the model view
	ToolHidden   ToolStatus = "hidden"   // valid but not offered
	ToolExcluded ToolStatus = "excluded" // invalid definition
)

// CatalogTool is one tool as the host knows it. Tool holds the raw definition
// exactly as the server listed it. Status and Reason here are the static
// verdicts (definition validity, allow/deny filters); per-session verdicts
// (unbindable secure parameters, trust level) are added by the model view.
type CatalogTool struct {
	Server string
	Tool   *secureparams.Tool
	Status ToolStatus
	Reason string
	// Parameters is what the model is sent for this tool
	// (llmview.Parameters of its inputSchema), computed once.
	Parameters json.RawMessage
	// memo holds what the host derives from this definition (see Memo);
	// nil for a CatalogTool built outside buildCatalog.
	memo *Memo
	// parsed: Tool is the parsed definition (not a placeholder for one
	// that was malformed or too large), so a re-listing may reuse it.
	parsed bool
}

// MemoOf returns the slot for what a user of the catalog derives from t's
// definition (the host's risk and trust verdicts), or nil for a CatalogTool
// built outside a listing. It is carried to the next listing only while the
// definition's bytes are unchanged, so it dies with the definition: a server
// that keeps changing its tools does not grow the host. (A function, not a
// method: CatalogTool is part of the host's API, the memo is not.)
func MemoOf(t *CatalogTool) *Memo { return t.memo }

// Memo holds one value, set once by the first Load and kept.
type Memo struct{ v atomic.Pointer[any] }

// Load returns the memo's value, storing newValue() first if it has none.
// Concurrent first loads agree on one value.
func (m *Memo) Load(newValue func() any) any {
	if p := m.v.Load(); p != nil {
		return *p
	}
	v := newValue()
	if m.v.CompareAndSwap(nil, &v) {
		return v
	}
	return *m.v.Load()
}

// ServerSnapshot is an immutable view of one server's catalog. A new snapshot
// replaces the old one on every (re)listing; Generation grows each time.
type ServerSnapshot struct {
	Name            string
	Status          ServerStatus
	Error           string
	ProtocolVersion string
	// SecureParams reports that the secure-params extension was negotiated.
	SecureParams bool
	// Extension is the negotiated extension id ("" when none).
	Extension string
	Tools     []*CatalogTool
	// Warnings are operator notes about the server as a whole.
	Warnings []string
	// Sandbox is what the kernel enforces for a stdio server (nil for a
	// server reached by url).
	Sandbox    *childproc.Enforcement
	Generation uint64
	byName     map[string]*CatalogTool
	// inputHeaders: some tool routes inputSchema arguments to headers.
	inputHeaders bool
	// listing numbers the listing the tools come from (see
	// Conn.installListing).
	listing uint64
}

// Tool returns the named tool, or nil.
func (s *ServerSnapshot) Tool(name string) *CatalogTool {
	if s == nil {
		return nil
	}
	return s.byName[name]
}

// failed is the snapshot of a server that could not be reached: it keeps
// the last known tools, so the model may still call them and that call
// reconnects (with backoff) once the server is back.
func (s *ServerSnapshot) failed(reason string) *ServerSnapshot {
	return &ServerSnapshot{
		Name: s.Name, Status: StatusError, Error: reason,
		ProtocolVersion: s.ProtocolVersion, SecureParams: s.SecureParams, Extension: s.Extension,
		Tools: s.Tools, byName: s.byName, inputHeaders: s.inputHeaders, Warnings: s.Warnings, listing: s.listing,
		Sandbox: s.Sandbox,
	}
}

// snapshotOf builds the snapshot of a complete listing.
func (c *Conn) snapshotOf(listed []secureparams.ListedTool, protocolVersion, ext string) *ServerSnapshot {
	snap := &ServerSnapshot{
		Name:            c.name,
		Status:          StatusConnected,
		ProtocolVersion: protocolVersion,
		SecureParams:    ext != "",
		Extension:       ext,
		Sandbox:         c.enforcement,
	}
	snap.Tools, snap.byName = buildCatalogLimited(c.name, listed, ext != "", c.cfg.Tools, c.Snapshot().parsedByRaw(), c.maxDefinitionBytes)
	for _, t := range snap.Tools {
		if t.Status == ToolExcluded {
			c.logger.Warn("tool excluded", "tool", t.Tool.Name, "reason", t.Reason)
		} else if t.Tool.InputHeaderTool() != nil {
			snap.inputHeaders = true
		}
	}
	return snap
}

// parsedByRaw indexes a snapshot's parsed definitions by their raw bytes,
// so a re-listing reuses the analysis of every definition that did not
// change (parsed tools are immutable once validated).
func (s *ServerSnapshot) parsedByRaw() map[string]*CatalogTool {
	if s == nil || len(s.Tools) == 0 {
		return nil
	}
	m := make(map[string]*CatalogTool, len(s.Tools))
	for _, ct := range s.Tools {
		if len(ct.Tool.Raw) > 0 {
			m[string(ct.Tool.Raw)] = ct
		}
	}
	return m
}

// buildCatalog parses and validates raw tool definitions. A malformed or
// invalid definition excludes that tool only, never the server. A
// definition byte-identical to one in prev reuses its parsed form.
func buildCatalog(server string, listed []secureparams.ListedTool, secureNegotiated bool, filter config.ToolFilter, prev map[string]*CatalogTool) ([]*CatalogTool, map[string]*CatalogTool) {
	return buildCatalogLimited(server, listed, secureNegotiated, filter, prev, 0)
}

// buildCatalogLimited is buildCatalog where a definition larger than
// maxDefinition (limits.maxDefinitionBytes; 0: no limit) is excluded
// unparsed: it would be sent to the model with every request.
func buildCatalogLimited(server string, listed []secureparams.ListedTool, secureNegotiated bool, filter config.ToolFilter, prev map[string]*CatalogTool, maxDefinition int64) ([]*CatalogTool, map[string]*CatalogTool) {
	tools := make([]*CatalogTool, 0, len(listed))
	count := make(map[string]int, len(listed))
	schemas := secureparams.NewSchemaCache()
	for i, def := range listed {
		ct := &CatalogTool{Server: server, Status: ToolActive}
		var t *secureparams.Tool
		var err error
		var params json.RawMessage
		if maxDefinition > 0 && int64(len(def.Raw)) > maxDefinition {
			ct.Tool = &secureparams.Tool{Name: fmt.Sprintf("#%d", i)}
			ct.Status, ct.Reason = ToolExcluded, oversizedDefinition(def.Raw, maxDefinition)
			tools = append(tools, ct)
			continue
		}
		if old, ok := prev[string(def.Raw)]; ok && old.parsed {
			t, params, ct.memo = old.Tool, old.Parameters, old.memo
		} else {
			t, err = def.Parse(schemas)
		}
		if ct.memo == nil {
			ct.memo = &Memo{}
		}
		if err != nil {
			ct.Tool = &secureparams.Tool{Name: fmt.Sprintf("#%d", i), Raw: def.Raw}
			ct.Status, ct.Reason = ToolExcluded, "malformed definition: "+err.Error()
			tools = append(tools, ct)
			continue
		}
		ct.Tool, ct.parsed = t, true
		ct.Parameters = params
		count[t.Name]++
		switch {
		case t.Name == "":
			// Nothing can name it: not in a filter, a binding, a rule or a
			// call.
			ct.Status, ct.Reason = ToolExcluded, "the tool has an empty name"
		case t.HasSecureSchema && !secureNegotiated:
			ct.Status, ct.Reason = ToolExcluded, reasonSecureNotNegotiated
		default:
			if err := secureparams.Validate(t); err != nil {
				ct.Status, ct.Reason = ToolExcluded, exclusionReason(err)
			} else if !filterAllows(filter, t.Name) {
				ct.Status, ct.Reason = ToolHidden, fmt.Sprintf("filtered out by the server's tools allow/deny list (mcpServers.%s.tools in the config; change it to offer the tool)", server)
			}
		}
		tools = append(tools, ct)
	}
	byName := make(map[string]*CatalogTool, len(tools))
	for _, ct := range tools {
		if ct.Status != ToolExcluded && ct.Parameters == nil {
			// The definition parsed, so its inputSchema is valid JSON (and
			// its single pass may have read the root members already).
			if typ, props, required, ok := ct.Tool.InputRoot(); ok {
				ct.Parameters = llmview.ParametersOfRoot(ct.Tool.InputSchema, typ, props, required)
			} else {
				ct.Parameters = llmview.ParametersOfValid(ct.Tool.InputSchema)
			}
		}
		if count[ct.Tool.Name] > 1 {
			// Which definition would the server execute? Unknowable: fail closed.
			ct.Status, ct.Reason = ToolExcluded, fmt.Sprintf("the server listed %d tools named %q", count[ct.Tool.Name], ct.Tool.Name)
		}
		if _, dup := byName[ct.Tool.Name]; !dup {
			byName[ct.Tool.Name] = ct
		}
	}
	return tools, byName
}

// oversizedDefinition is the exclusion reason of a definition larger than
// limits.maxDefinitionBytes, naming the tool when its name can be read.
func oversizedDefinition(raw json.RawMessage, limit int64) string {
	var named struct {
		Name string `json:"name"`
	}
	what := "the definition"
	if json.Unmarshal(raw, &named) == nil && named.Name != "" {
		what = fmt.Sprintf("the definition of %q", truncate(named.Name, 80))
	}
	return fmt.Sprintf("%s is %s, more than limits.maxDefinitionBytes (%s)", what, wirecheck.ByteSize(int64(len(raw))), wirecheck.ByteSize(limit))
}

func exclusionReason(err error) string {
	var ex *secureparams.ExclusionError
	if errors.As(err, &ex) {
		return ex.Reason
	}
	return err.Error()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// filterAllows reports whether the filter offers the named tool: deny wins,
// an empty allow list means all.
func filterAllows(f config.ToolFilter, name string) bool {
	for _, g := range f.Deny {
		if glob.Match(g, name) {
			return false
		}
	}
	if len(f.Allow) == 0 {
		return true
	}
	for _, g := range f.Allow {
		if glob.Match(g, name) {
			return true
		}
	}
	return false
}

// LoadListing builds the server's catalog from tools/list results received
// elsewhere, each page being the raw "result" object of one tools/list
// response, and installs it as the server's snapshot: the same splitting,
// limits, parsing and validation as a listing over the connection, with the
// modern protocol and, when secureParams is set, the server's first
// configured secure-params extension taken as negotiated. The server is not
// contacted.
//
// The pages are copied first: parsed definitions share their bytes (see
// secureparams.ParseTool), and the caller may reuse its buffers.
func (c *Conn) LoadListing(secureParams bool, pages ...json.RawMessage) error {
	var listed []secureparams.ListedTool
	for i, page := range pages {
		body, err := secureparams.SplitToolsPage(bytes.Clone(page))
		if err != nil {
			return fmt.Errorf("tools/list page %d: %w", i, err)
		}
		listed = append(listed, body.Tools...)
		if len(listed) > maxTools {
			return fmt.Errorf("tools/list: more than %d tools", maxTools)
		}
	}
	ext := ""
	if secureParams {
		ext = config.DefaultSecureParamsExtension
		if ids := c.extensionIDs(); len(ids) > 0 {
			ext = ids[0]
		}
	}
	seq := c.nextListing()
	snap := c.snapshotOf(listed, config.ProtocolModern, ext)
	snap.listing = seq
	c.installListing(snap)
	return nil
}
