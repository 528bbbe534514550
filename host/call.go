package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/secureparams"
)

// CallResult is a tool call's outcome as the server returned it, after
// redaction of any secure value echoed back.
type CallResult struct {
	Server string
	Tool   string
	Result *mcp.CallToolResult
	// SecureParams are the names of the secure parameters sent (never values).
	SecureParams []string
	// Decision is the approval decision that let the call run (nil when no
	// approval workflow is configured).
	Decision *CallDecision
}

// CallDecision is the approval decision of one call, for output and audit.
type CallDecision struct {
	Decision  string   `json:"decision"`
	Outcome   string   `json:"outcome"`
	Approvers int      `json:"approvers"`
	Rules     []string `json:"rules"`
}

// IsError reports a tool execution error (isError: true).
func (r *CallResult) IsError() bool { return r != nil && r.Result != nil && r.Result.IsError }

// CallTool runs one tool call for the session: it refuses arguments that name
// a secure parameter, resolves and validates the secure values, sends the call
// with secureArguments, and maps failures to a *Error of the right Kind.
func (s *Session) CallTool(ctx context.Context, server, tool string, args json.RawMessage) (*CallResult, error) {
	return s.callTool(ctx, server, tool, args, callInfo{id: newCallID()})
}

// callInfo identifies a call within a turn, for events and audit.
type callInfo struct {
	id          string
	exposedName string
	step        int
	emit        func(Event) // nil outside a turn
	// checkSchema validates the arguments against inputSchema before
	// anything else happens (model calls: the model gets the validator's
	// message and can correct itself).
	checkSchema bool
}

func checkSecureNames(args json.RawMessage, ct *CatalogTool) error {
	return secureparams.CheckArguments(args, ct.Tool.SecureParams)
}

func (s *Session) callTool(ctx context.Context, server, tool string, args json.RawMessage, info callInfo) (*CallResult, error) {
	h := s.host
	c, ok := h.conns[server]
	if !ok {
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrUnknownServer, "unknown server %q", server)
	}
	arguments, err := decodeArguments(args)
	if err != nil {
		return nil, newError(KindToolError, modelMsgNotJSONObject(err),
			err, "invalid arguments for %s/%s: %v", server, tool, err)
	}

	// The decision holds for the definition it was made under. Approvers
	// may take minutes, and the server may change the tool meanwhile (to a
	// destroy with global blast radius, say): after the decision, and the
	// secure values resolved for it, the catalog is checked again, and a
	// changed definition is decided again from the start (secure-name
	// guard, schema, approval). Both decisions are audited.
	var (
		ct       *CatalogTool
		rec      *approvals.Record
		decision *CallDecision
		call     *secureCall
	)
	for attempt := 1; ; attempt++ {
		ct, err = s.lookupTool(ctx, c, tool)
		if err != nil {
			return nil, err
		}
		t := ct.Tool
		if err := checkSecureNames(args, ct); err != nil {
			if errors.Is(err, ErrDuplicateKeyInArguments) {
				// Servers disagree on which of repeated values wins, and the
				// audit record could not say which one was meant.
				h.logger.Warn("refused a call whose arguments repeat a key",
					"server", server, "tool", tool, "session", s.id)
				s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeInjectionBlocked, nil)
				return nil, newError(KindToolError, modelMsgDuplicateKey, err,
					"refused %s/%s: an object in the arguments repeats a key; nothing was sent", server, tool)
			}
			h.logger.Warn("refused a call whose arguments name a secure parameter (possible prompt injection)",
				"server", server, "tool", tool, "session", s.id)
			s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeInjectionBlocked, nil)
			return nil, newError(KindBinding, modelMsgInvalidArguments, err,
				"refused %s/%s: the arguments name a host-controlled (secure) parameter; nothing was sent", server, tool)
		}
		// A model that learned a protected value (from a leak elsewhere, or a
		// user who pasted it) must not forward it to a server: refuse, audit,
		// and tell the model nothing about the value.
		if info.checkSchema && h.redactor.ContainsSecretBytes(args) {
			h.logger.Warn("refused a model call whose arguments hold a protected value (possible exfiltration)",
				"server", server, "tool", tool, "session", s.id)
			s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeInjectionBlocked, nil)
			return nil, newError(KindBinding, modelMsgSecretInArgs, ErrSecretInArguments,
				"refused %s/%s: the model's arguments hold a protected value; nothing was sent", server, tool)
		}
		// After the secure-name guard, so the validator's message (which quotes
		// the arguments) never echoes a secure name back to the model.
		if info.checkSchema {
			if err := h.args.validate(t.DefHash(), t.InputSchema, t.ValidationCost(), arguments); err != nil {
				return nil, newError(KindToolError, modelMsgSchemaInvalid(err), err, "invalid arguments for %s/%s: %v", server, tool, err)
			}
		}

		rec, decision, err = s.gateCall(ctx, server, ct, args, info)
		if err != nil {
			return nil, err
		}

		call, err = s.secureCall(ctx, server, t)
		if err != nil {
			s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeBindingFailed, rec)
			return nil, err
		}
		if !definitionChanged(ct, c.Snapshot().Tool(tool)) {
			break
		}
		// The decision was for a definition the server no longer offers:
		// audit it as not executed and decide again.
		h.logger.Warn("the tool's definition changed while its call was being decided; deciding again",
			"server", server, "tool", tool, "session", s.id, "decidedHash", t.DefHash())
		rec.Result = approvals.ResultNotExecuted
		if err := h.writeAudit(ctx, rec); err != nil {
			h.logger.Error("audit write failed; the call was not sent", "server", server, "tool", tool, "err", err)
			return nil, newError(KindInternal, modelMsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, err),
				"%s/%s: refused, the call was not sent: its audit record could not be written: %v", server, tool, err)
		}
		if attempt == maxRedecisions {
			return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable,
				"%s/%s: the tool's definition changed %d times while its call was being decided; not sent", server, tool, attempt)
		}
	}
	t := ct.Tool
	// No un-audited execution: the decision record is handed to the OS
	// before the call is sent, and a failed write refuses the call.
	if werr := h.writeAudit(ctx, rec); werr != nil {
		h.logger.Error("audit write failed; the call was not sent", "server", server, "tool", tool, "err", werr)
		return nil, newError(KindInternal, modelMsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, werr),
			"%s/%s: refused, the call was not sent: its audit record could not be written: %v", server, tool, werr)
	}
	start := time.Now()
	result, err := s.send(ctx, c, t, arguments, call)
	if errors.Is(err, ErrSecureRejected) {
		// The server rejected the host's values (an expired or revoked
		// token, say): drop the cached values and try once more with fresh
		// ones.
		for _, p := range t.SecureParams {
			h.binder.Invalidate(bindings.Scope{SessionID: s.id, Subject: s.subject, Server: server, Tool: t.Name, Param: p})
		}
		if fresh, rerr := s.secureCall(ctx, server, t); rerr == nil {
			h.logger.Info("server rejected the secure arguments; retrying once with freshly resolved values", "server", server, "tool", tool)
			call = fresh
			result, err = s.send(ctx, c, t, arguments, call)
		}
	}
	// The result record is a copy: the sink may keep the decision record.
	done := *rec
	done.Phase = approvals.PhaseResult
	done.TS = time.Now().UTC()
	done.DurationMs = done.TS.Sub(start).Milliseconds()
	switch {
	case err != nil && KindOf(err) == KindBinding:
		done.Outcome = approvals.OutcomeBindingFailed
		done.Result = approvals.ResultServerError
	case err != nil:
		done.Result = approvals.ResultServerError
	case result.IsError():
		done.Result = approvals.ResultToolError
	default:
		done.Result = approvals.ResultOK
	}
	// The result record is written before the result goes back to the
	// model; a failed write withholds the result (and the sink refuses
	// later calls).
	if werr := h.writeAudit(ctx, &done); werr != nil {
		h.logger.Error("audit write failed after the call ran", "server", server, "tool", tool, "err", werr)
		if err == nil {
			return nil, newError(KindInternal, modelMsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, werr),
				"%s/%s: the call ran, but its result record could not be written to the audit log, so its result is withheld: %v", server, tool, werr)
		}
	}
	if err != nil {
		return nil, err
	}
	result.Decision = decision
	return result, nil
}

// decodeArguments checks that args is a JSON object (absent and null mean
// {}) and returns it as is: mcp-go sends the raw bytes, so the arguments
// are never decoded and re-encoded on the call path.
func decodeArguments(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if trimmed[0] != '{' {
		return nil, errors.New("arguments are not a JSON object")
	}
	return json.RawMessage(trimmed), nil
}

// maxRedecisions bounds how often one call is decided again because the
// tool's definition changed while it was being decided.
const maxRedecisions = 3

// definitionChanged reports whether the catalog no longer offers decided as
// it was when the call was decided: the tool is gone, not active, or has
// another definition.
func definitionChanged(decided, current *CatalogTool) bool {
	switch {
	case current == nil || current.Status != ToolActive:
		return true
	case current == decided || current.Tool == decided.Tool:
		return false
	}
	return current.Tool.DefHash() != decided.Tool.DefHash()
}

// lookupTool finds an offered tool, connecting lazily and re-listing once
// when the tool is unknown.
func (s *Session) lookupTool(ctx context.Context, c *conn, tool string) (*CatalogTool, error) {
	if _, err := c.connect(ctx); err != nil {
		return nil, newError(KindUnavailable, modelMsgUnavailable, err, "%v", err)
	}
	snap := c.Snapshot()
	ct := snap.Tool(tool)
	if ct == nil {
		if err := c.refresh(ctx); err != nil {
			return nil, newError(KindUnavailable, modelMsgUnavailable, err, "%v", err)
		}
		snap = c.Snapshot()
		ct = snap.Tool(tool)
	}
	if ct == nil {
		note := ""
		if len(snap.Warnings) > 0 {
			note = " (" + strings.Join(snap.Warnings, "; ") + ")"
		}
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "server %s has no tool %q%s", c.name, tool, note)
	}
	if ct.Status != ToolActive {
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", c.name, tool, ct.Status, ct.Reason)
	}
	if s.host.toolTainted(snap, ct) {
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", c.name, s.host.redactor.Redact(tool), ToolExcluded, taintReason)
	}
	return ct, nil
}

// secureCall resolves, coerces and validates the tool's secure values. For a
// tool without secureInputSchema the returned call carries no values: such a
// tool never gets secureArguments (it still lets the wire seam keep the raw
// error of the call).
func (s *Session) secureCall(ctx context.Context, server string, t *secureparams.Tool) (*secureCall, error) {
	if !t.HasSecureSchema {
		return &secureCall{tool: t.Name}, nil
	}
	h := s.host
	schema, err := t.ValueSchema()
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: secureInputSchema cannot be compiled: %v", server, t.Name, err)
	}
	scope := bindings.Scope{SessionID: s.id, Subject: s.subject, Server: server, Tool: t.Name}
	resolved, err := h.binder.Resolve(s.bindingContext(ctx), scope, schema.PropertiesShared(), t.SecureRequired)
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
	}
	// Bound values rarely change between calls: reuse the prepared call
	// (coerced, validated, encoded) while they are the same.
	if v, ok := s.prepared.Load(t); ok {
		if p := v.(*preparedCall); p.matches(resolved) {
			return p.call.fresh(), nil
		}
	}
	values := make(map[string]any, len(resolved))
	for name, r := range resolved {
		v, err := schema.Coerce(name, r.Value)
		if err != nil {
			return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
		}
		values[name] = v
	}
	values = secureparams.Select(values, t)
	if values == nil {
		values = map[string]any{}
	}
	if err := schema.Validate(values); err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: secure value does not match secureInputSchema: %v", server, t.Name, err)
	}
	headers, err := secureparams.ParamHeaders(t, values)
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
	}
	encoded, err := json.Marshal(values)
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, errRedactedEncoding, "%s/%s: %v", server, t.Name, errRedactedEncoding)
	}
	quoted, _ := json.Marshal(t.Name) // a string always encodes
	call := &secureCall{tool: t.Name, values: values, encoded: encoded, headers: headers,
		sortedNames: slices.Sorted(maps.Keys(values)), quotedTool: quoted}
	if _, replaced := s.prepared.Swap(t, newPreparedCall(resolved, call)); !replaced && s.preparedN.Add(1) > maxPrepared {
		// Keyed by definition: a server that keeps changing its tools
		// would grow a long session without bound. Start over.
		s.prepared.Clear()
		s.preparedN.Store(0)
	}
	return call.fresh(), nil
}

// maxPrepared bounds a session's prepared calls (one per tool definition
// called); beyond it the cache is cleared.
const maxPrepared = 256

// preparedCall is a session's last prepared secure call for one tool
// definition, with the resolved values it was prepared from. Keyed by the
// parsed definition (a pointer): a changed definition is a new key.
type preparedCall struct {
	resolved map[string]string
	call     *secureCall // read-only template
}

func newPreparedCall(resolved map[string]bindings.Resolved, call *secureCall) *preparedCall {
	p := &preparedCall{resolved: make(map[string]string, len(resolved)), call: call}
	for name, r := range resolved {
		p.resolved[name] = r.Value
	}
	return p
}

// matches reports whether resolved are the values p was prepared from.
func (p *preparedCall) matches(resolved map[string]bindings.Resolved) bool {
	if len(resolved) != len(p.resolved) {
		return false
	}
	for name, r := range resolved {
		if v, ok := p.resolved[name]; !ok || v != r.Value {
			return false
		}
	}
	return true
}

// send performs the tools/call and maps the outcome.
func (s *Session) send(ctx context.Context, c *conn, t *secureparams.Tool, arguments json.RawMessage, call *secureCall) (*CallResult, error) {
	h := s.host
	for attempt := 0; ; attempt++ {
		cl, err := c.connect(ctx)
		if err != nil {
			return nil, newError(KindUnavailable, modelMsgUnavailable, err, "%v", err)
		}
		timeout := c.cfg.CallTimeout
		if timeout <= 0 {
			timeout = 60 * time.Second
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		call.reset()
		cctx = withSecureCall(cctx, call)
		req := mcp.CallToolRequest{}
		req.Params.Name = t.Name
		req.Params.Arguments = arguments
		result, err := cl.CallTool(cctx, req)
		cancel()
		if err == nil {
			out := &CallResult{Server: c.name, Tool: t.Name, Result: h.redactResult(result), SecureParams: call.names()}
			return out, nil
		}

		switch {
		case ctx.Err() != nil:
			return nil, newError(KindInternal, modelMsgCancelled, ctx.Err(), "%s/%s: cancelled", c.name, t.Name)
		case cctx.Err() != nil && isDeadline(err):
			return nil, newError(KindUnavailable, modelMsgTimeout, err, "%s/%s: no answer within %s", c.name, t.Name, timeout)
		case errors.Is(err, ErrProtocol):
			var perr *ProtocolError
			errors.As(err, &perr)
			return nil, newError(KindToolError, modelMsgBadResponse, err,
				"%s/%s: %s", c.name, t.Name, perr.Error())
		case isConnectionFailure(err):
			c.dropClient(cl, err)
			return nil, newError(KindUnavailable, modelMsgConnectionLost, err,
				"%s/%s: connection lost: %s", c.name, t.Name, h.redactor.Redact(err.Error()))
		}

		code, message := rpcError(err, call)
		switch code {
		case mcp.METHOD_NOT_FOUND, mcp.INVALID_PARAMS:
			// Either the tool is gone (servers answer -32601 or -32602) or,
			// for a call with secureArguments, the host's values were rejected.
			if rerr := c.refresh(ctx); rerr != nil {
				h.logger.Warn("refresh after unknown-tool answer failed", "server", c.name, "err", rerr)
			}
			if ct := c.Snapshot().Tool(t.Name); ct == nil || ct.Status != ToolActive {
				return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "%s/%s is no longer offered by the server", c.name, t.Name)
			}
			if code == mcp.INVALID_PARAMS && call.carriesSecure() {
				return nil, newError(KindBinding, modelMsgOperatorFailure, fmt.Errorf("%w: %w", ErrSecureRejected, err),
					"%s/%s: the server rejected the call's secure arguments (-32602): %s", c.name, t.Name, h.redactor.Redact(message))
			}
			if code == mcp.METHOD_NOT_FOUND && attempt == 0 {
				continue
			}
		case mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
			fix := "check secureParams.extensions"
			if ids := requiredExtensions(call.lastError()); len(ids) > 0 {
				fix = fmt.Sprintf("the server requires the extension %s: add it to mcpServers.%s.secureParams.extensions (and bind the tool's secure parameters)",
					h.redactor.Redact(strings.Join(ids, ", ")), c.name)
			}
			return nil, newError(KindBinding, modelMsgOperatorFailure, err,
				"%s/%s: the server requires a client capability that was not negotiated (-32021): %s; %s", c.name, t.Name, h.redactor.Redact(message), fix)
		}
		if call.carriesSecure() {
			return nil, newError(KindToolError, modelMsgServerError, err,
				"%s/%s: server error %d: %s", c.name, t.Name, code, h.redactor.Redact(message))
		}
		safe := h.redactor.Redact(message)
		return nil, newError(KindToolError, modelMsgServerErrorText(safe), err,
			"%s/%s: server error %d: %s", c.name, t.Name, code, safe)
	}
}

func isDeadline(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}

// rpcError extracts the JSON-RPC error code and message, preferring the raw
// error the wire seam kept.
// requiredExtensions reads the extension ids a -32021 answer's data says
// the server requires (SEP-3221: data.requiredCapabilities.extensions), at
// most five, each cut to 100 bytes, sorted; nil when there are none.
func requiredExtensions(raw *mcp.JSONRPCErrorDetails) []string {
	if raw == nil || raw.Data == nil {
		return nil
	}
	b, err := json.Marshal(raw.Data)
	if err != nil {
		return nil
	}
	var data struct {
		RequiredCapabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"requiredCapabilities"`
	}
	if json.Unmarshal(b, &data) != nil {
		return nil
	}
	ids := make([]string, 0, len(data.RequiredCapabilities.Extensions))
	for id := range data.RequiredCapabilities.Extensions {
		ids = append(ids, truncate(id, 100))
	}
	slices.Sort(ids)
	if len(ids) > 5 {
		ids = ids[:5]
	}
	return ids
}

func rpcError(err error, call *secureCall) (int, string) {
	if raw := call.lastError(); raw != nil {
		return raw.Code, raw.Message
	}
	for _, m := range []struct {
		sentinel error
		code     int
	}{
		{mcp.ErrMethodNotFound, mcp.METHOD_NOT_FOUND},
		{mcp.ErrInvalidParams, mcp.INVALID_PARAMS},
		{mcp.ErrInternalError, mcp.INTERNAL_ERROR},
		{mcp.ErrInvalidRequest, mcp.INVALID_REQUEST},
		{mcp.ErrParseError, mcp.PARSE_ERROR},
	} {
		if errors.Is(err, m.sentinel) {
			return m.code, err.Error()
		}
	}
	var capErr mcp.MissingRequiredClientCapabilityError
	if errors.As(err, &capErr) {
		return mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, err.Error()
	}
	return 0, err.Error()
}

// redactResult masks any registered secret the server echoed back. The
// common case — plain text content that contains no secret — is checked
// without re-encoding the result.
func (h *Host) redactResult(r *mcp.CallToolResult) *mcp.CallToolResult {
	if r == nil || h.redactor.Len() == 0 {
		return r
	}
	if clean, known := h.resultIsClean(r); known && clean {
		return r
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return withheld(r)
	}
	cleaned := h.redactor.RedactJSON(raw)
	if bytes.Equal(cleaned, raw) {
		return r
	}
	out, err := mcp.ParseCallToolResult((*json.RawMessage)(&cleaned))
	if err != nil {
		return withheld(r)
	}
	return out
}

// valueIsClean walks decoded JSON for strings that contain a secret; known
// is false for values it cannot look into.
//
// Numbers are looked into by the JSON path (RedactJSON), and only when a
// registered value could be part of one (a numeric PIN, say).
func valueIsClean(v any, has func(string) bool, numbers bool) (clean, known bool) {
	switch x := v.(type) {
	case nil, bool:
		return true, true
	case float64, json.Number:
		return true, !numbers
	case string:
		return !has(x), true
	case map[string]any:
		for k, e := range x {
			if has(k) {
				return false, true
			}
			if clean, known := valueIsClean(e, has, numbers); !clean || !known {
				return clean, known
			}
		}
		return true, true
	case []any:
		for _, e := range x {
			if clean, known := valueIsClean(e, has, numbers); !clean || !known {
				return clean, known
			}
		}
		return true, true
	default:
		return false, false
	}
}

func withheld(r *mcp.CallToolResult) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{mcp.NewTextContent("[result withheld: it contained a secret]")}}
}

// resultIsClean checks every string of a result for secrets: content
// text, MIME types, base64 payloads (printed by call --json), and each
// block's annotations and _meta as well as the result's own _meta (printed
// by call --json and stream-json, handed to library callers). known is
// false when the result has parts it does not look into.
func (h *Host) resultIsClean(r *mcp.CallToolResult) (clean, known bool) {
	has, numbers := h.redactor.ContainsSecret, h.redactor.MayMatchNumbers()
	if r.StructuredContent != nil {
		if clean, known := valueIsClean(r.StructuredContent, has, numbers); !known || !clean {
			return clean, known
		}
	}
	// _meta never reaches the model, but library callers may log it; walk
	// it without re-encoding (modern results carry it every time).
	if clean, known := metaIsClean(r.Meta, has, numbers); !known || !clean {
		return clean, known
	}
	for _, c := range r.Content {
		var ann *mcp.Annotations
		var meta *mcp.Meta
		var texts [2]string
		switch v := c.(type) {
		case mcp.TextContent:
			ann, meta, texts[0] = v.Annotations, v.Meta, v.Text
		case *mcp.TextContent:
			ann, meta, texts[0] = v.Annotations, v.Meta, v.Text
		case mcp.ImageContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		case *mcp.ImageContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		case mcp.AudioContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		case *mcp.AudioContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		default:
			return false, false
		}
		if has(texts[0]) || has(texts[1]) || !annotationsAreClean(ann, has) {
			return false, true
		}
		if clean, known := metaIsClean(meta, has, numbers); !known || !clean {
			return clean, known
		}
	}
	return true, true
}

func metaIsClean(m *mcp.Meta, has func(string) bool, numbers bool) (clean, known bool) {
	if m == nil {
		return true, true
	}
	if m.ProgressToken != nil {
		if clean, known := valueIsClean(m.ProgressToken, has, numbers); !known || !clean {
			return clean, known
		}
	}
	return valueIsClean(m.AdditionalFields, has, numbers)
}

func annotationsAreClean(a *mcp.Annotations, has func(string) bool) bool {
	if a == nil {
		return true
	}
	if has(a.LastModified) {
		return false
	}
	for _, role := range a.Audience {
		if has(string(role)) {
			return false
		}
	}
	return true
}
