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
// (RuleHeader, on every transport) and the mirroring is done here, from the
// mcp.Tool secureparams builds once per annotated definition, with mcp-go's
// own GenerateParamHeaders.

// paramHeaderSource finds the listed definitions whose arguments travel in
// headers too.
type paramHeaderSource interface {
	// hasInputHeaders is a cheap check that any listed tool has them.
	hasInputHeaders() bool
	// inputHeaderTool is the named tool's definition for mirroring, or nil.
	inputHeaderTool(name string) *mcp.Tool
}

func (c *Conn) hasInputHeaders() bool { return c.Snapshot().inputHeaders }

func (c *Conn) inputHeaderTool(name string) *mcp.Tool {
	ct := c.Snapshot().Tool(name)
	if ct == nil || ct.Status == ToolExcluded {
		return nil
	}
	return ct.Tool.InputHeaderTool()
}

// withParamHeaders returns the request with the Mcp-Param-* headers of its
// tool's x-mcp-header arguments (on a copy of its headers).
func withParamHeaders(request transport.JSONRPCRequest, source paramHeaderSource) transport.JSONRPCRequest {
	tool := source.inputHeaderTool(callName(request.Params))
	if tool == nil {
		return request
	}
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
