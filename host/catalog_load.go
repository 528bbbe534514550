package host

import (
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/secureparams"
)

// LoadListing builds a server's catalog from tools/list results received
// elsewhere, each page being the raw "result" object of one tools/list
// response, and installs it as the server's snapshot: the same splitting,
// limits, parsing and validation as a listing over the connection, with the
// modern protocol and, when secureParams is set, the server's first
// configured secure-params extension taken as negotiated. The server is not
// contacted; a later call connects (and re-lists) as usual.
//
// It exists so that catalog building can be measured and inspected without
// a transport (benchmarks, offline tooling); hosts talking to servers never
// need it.
func (h *Host) LoadListing(server string, secureParams bool, pages ...json.RawMessage) error {
	c, ok := h.conns[server]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	var listed []secureparams.ListedTool
	for i, page := range pages {
		body, err := secureparams.SplitToolsPage(page)
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
	c.setSnapshot(c.snapshotOf(listed, config.ProtocolModern, ext))
	return nil
}
