package mcpconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/secureparams"
)

// extensionIDs are the secure-params extension ids to declare. SEP-3221
// makes binding opt-in: declared only for servers with bindings configured.
func (c *Conn) extensionIDs() []string {
	if !c.declareSecure {
		return nil
	}
	if len(c.cfg.SecureParams.Extensions) == 0 {
		return []string{config.DefaultSecureParamsExtension}
	}
	return c.cfg.SecureParams.Extensions
}

// negotiatedExtension is the first of our extension ids the server advertised.
func (c *Conn) negotiatedExtension(cl *client.Client) string {
	advertised := cl.GetServerCapabilities().Extensions
	for _, id := range c.extensionIDs() {
		// An extension advertised as null is not advertised: its
		// settings object is missing.
		if v, ok := advertised[id]; ok && v != nil {
			return id
		}
	}
	return ""
}

// list fetches every tools/list page raw and builds a snapshot. mcp-go
// never sees the definitions (the wire seam hands it an empty page), so
// the host's own parsing is the only one.
func (c *Conn) list(ctx context.Context, cl *client.Client, w *wireTransport) (*ServerSnapshot, error) {
	seq := c.nextListing()
	var listed []secureparams.ListedTool
	seen := map[string]bool{}
	cursor := mcp.Cursor("")
	for page := 0; ; page++ {
		if page >= maxListPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxListPages)
		}
		req := mcp.ListToolsRequest{}
		req.Params.Cursor = cursor
		x := &exchange{method: string(mcp.MethodToolsList)}
		_, err := cl.ListToolsByPage(x.bind(ctx), req)
		raw := x.result
		if raw == nil {
			if err == nil {
				err = errors.New("empty result")
			}
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		// mcp-go's own transports decode every response with
		// encoding/json, which has validated the page; a transport from
		// Options.Transports may not have.
		split := secureparams.SplitValidToolsPage
		if c.transport != nil {
			split = secureparams.SplitToolsPage
			// Parsed definitions share the page's bytes for as long as
			// they live (secureparams.ParseTool); mcp-go's own transports
			// decode each response into fresh memory, a transport handed
			// in may reuse its buffer for the next one.
			raw = bytes.Clone(raw)
		}
		body, err := split(raw)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		listed = append(listed, body.Tools...)
		if len(listed) > maxTools {
			return nil, fmt.Errorf("tools/list: more than %d tools", maxTools)
		}
		if body.NextCursor == nil || *body.NextCursor == "" {
			break
		}
		if seen[*body.NextCursor] {
			return nil, fmt.Errorf("tools/list: cursor %q repeats", truncate(*body.NextCursor, 40))
		}
		seen[*body.NextCursor] = true
		cursor = mcp.Cursor(*body.NextCursor)
	}
	ext := c.negotiatedExtension(cl)
	snap := c.snapshotOf(listed, cl.ProtocolVersion(), ext)
	snap.listing = seq
	snap.Warnings = append(snap.Warnings, c.secureWarnings(cl, ext)...)
	if c.undeclaredExtension(cl) != "" {
		for _, ct := range snap.Tools {
			if ct.Reason == reasonSecureNotNegotiated {
				ct.Reason += " (no binding names this server: add a bindings entry for it)"
			}
		}
	}
	return snap, nil
}

// reasonSecureNotNegotiated excludes a tool with a secureInputSchema from a
// server the extension was not negotiated with.
const reasonSecureNotNegotiated = "declares secureInputSchema but the secure-params extension was not negotiated"

// undeclaredExtension is the secure-params extension id the server
// advertises while the host did not declare the extension (no binding
// names the server); "" otherwise. The ids looked for are the configured
// ones and the known ones (config.KnownSecureParamsExtensions): a Toolbox
// server hides its tools that take secure values from a client that does
// not declare its id, so they would vanish without a word.
func (c *Conn) undeclaredExtension(cl *client.Client) string {
	if c.declareSecure {
		return ""
	}
	return advertisedOf(cl, c.secureIDsKnown())
}

// secureIDsKnown are the configured extension ids, then the known ones.
func (c *Conn) secureIDsKnown() []string {
	ids := slices.Clone(c.cfg.SecureParams.Extensions)
	if len(ids) == 0 {
		ids = []string{config.DefaultSecureParamsExtension}
	}
	for _, id := range config.KnownSecureParamsExtensions {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// advertisedOf is the first of ids the server advertises, "" for none.
func advertisedOf(cl *client.Client, ids []string) string {
	advertised := cl.GetServerCapabilities().Extensions
	for _, id := range ids {
		if _, ok := advertised[id]; ok {
			return id
		}
	}
	return ""
}

// secureWarnings are the operator warnings about the secure-params
// extension of a listing: an id the server advertises that the host does
// not declare, and Toolbox's on a connection older than 2026-07-28, where
// Toolbox offers no tool that takes secure values.
func (c *Conn) secureWarnings(cl *client.Client, negotiated string) []string {
	var out []string
	configured := c.cfg.SecureParams.Extensions
	if len(configured) == 0 {
		configured = []string{config.DefaultSecureParamsExtension}
	}
	if id := c.undeclaredExtension(cl); id != "" {
		w := fmt.Sprintf("the server supports secure parameters (%s), but no binding names server %q, "+
			"so agenthost did not declare the extension and the server's tools that take secure values are not offered; "+
			"add a bindings entry for the server (docs/config.md)", id, c.name)
		if !slices.Contains(configured, id) {
			w += fmt.Sprintf(" and add %s to mcpServers.%s.secureParams.extensions", id, c.name)
		}
		out = append(out, w)
	} else if c.declareSecure && negotiated == "" {
		if id := advertisedOf(cl, c.secureIDsKnown()); id != "" && !slices.Contains(configured, id) {
			out = append(out, fmt.Sprintf("the server supports secure parameters as %s, which agenthost does not declare to it "+
				"(mcpServers.%s.secureParams.extensions is %s), so the server's tools that take secure values are not offered; "+
				"add %s to that list (docs/config.md)", id, c.name, strings.Join(configured, ", "), id))
		}
	}
	if id := advertisedOf(cl, []string{config.ToolboxSecureParamsExtension}); id != "" && !mcp.IsModernProtocol(cl.ProtocolVersion()) {
		out = append(out, fmt.Sprintf("the server advertises %s, which offers tools that take secure values only on protocol %s; "+
			"this connection speaks %s, so those tools are not listed (set mcpServers.%s.protocolVersion to auto or %s)",
			id, config.ProtocolModern, cl.ProtocolVersion(), c.name, config.ProtocolModern))
	}
	return out
}
