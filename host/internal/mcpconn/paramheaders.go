package mcpconn

import (
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// SEP-2243: on Streamable HTTP in the 2026-07-28 era a client mirrors every
// tools/call argument whose inputSchema property carries x-mcp-header into
// an Mcp-Param-* header, and excludes a tool whose annotations are invalid.
// mcp-go does both from the definitions it decoded, but the host lists raw
// and mcp-go never sees them: the exclusion is secureparams.Validate's
// (RuleHeader, on every transport) and the mirroring is the seam's, from
// the mcp.Tool secureparams builds once per annotated definition, which the
// call's exchange carries (exchange.headerTool), with mcp-go's own
// GenerateParamHeaders.

// paramHeaderTool is the listed definition of the named tool for
// mirroring, or nil when no argument of it travels in a header or the
// seam mirrors nothing (not HTTP in the 2026-07-28 era).
func (c *Conn) paramHeaderTool(w *wireTransport, name string) *mcp.Tool {
	if !w.mirrorParams.Load() {
		return nil
	}
	snap := c.Snapshot()
	if !snap.inputHeaders {
		return nil
	}
	ct := snap.Tool(name)
	if ct == nil || ct.Status == ToolExcluded {
		return nil
	}
	return ct.Tool.InputHeaderTool()
}

// withParamHeaders returns the request with the Mcp-Param-* headers of its
// tool's x-mcp-header arguments (on a copy of its headers).
func withParamHeaders(request transport.JSONRPCRequest, tool *mcp.Tool) transport.JSONRPCRequest {
	var args json.RawMessage
	switch p := request.Params.(type) {
	case map[string]json.RawMessage:
		args = p["arguments"]
	default:
		encoded, err := json.Marshal(p)
		if err != nil {
			return request
		}
		var v struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(encoded, &v) != nil {
			return request
		}
		args = v.Arguments
	}
	if len(args) == 0 {
		return request
	}
	params := make([]byte, 0, len(args)+14)
	params = append(append(append(params, `{"arguments":`...), args...), '}')
	headers := mcp.GenerateParamHeaders(tool, params)
	if len(headers) == 0 {
		return request
	}
	header := http.Header{}
	if request.Header != nil {
		header = request.Header.Clone()
	}
	for name, value := range headers {
		header.Set(name, value)
	}
	request.Header = header
	return request
}
