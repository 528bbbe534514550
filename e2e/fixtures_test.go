package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureFile is the SEP-3221 decision fixture shared with the secureparams
// unit tests; the test server serves its entries as tools.
var fixtureFile = filepath.Join("..", "host", "secureparams", "testdata", "secure_params_tools.json")

type fixtureEntry struct {
	ID     string          `json:"id"`
	Expect string          `json:"expect"`
	Tool   json.RawMessage `json:"tool"`
}

// secureNames collects every property name of a secureInputSchema.
func (e fixtureEntry) secureNames() []string {
	var tool struct {
		Secure json.RawMessage `json:"secureInputSchema"`
	}
	_ = json.Unmarshal(e.Tool, &tool)
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	_ = json.Unmarshal(tool.Secure, &schema)
	return append(sortedKeys(schema.Properties), schema.Required...)
}

func (e fixtureEntry) name() string {
	var tool struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(e.Tool, &tool)
	return tool.Name
}

// TestFixtureDecisions serves every fixture tool from a real server and
// checks agenthost's verdict on each, in both eras: accepted tools are
// active (every secure name is bound), rejected ones excluded with a reason.
func TestFixtureDecisions(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(fixtureFile)
	if err != nil {
		t.Fatal(err)
	}
	var fixture struct {
		Tools []fixtureEntry `json:"tools"`
	}
	if err := json.Unmarshal(data, &fixture); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if len(fixture.Tools) < 20 {
		t.Fatalf("fixture has only %d tools", len(fixture.Tools))
	}
	params := map[string]any{}
	for _, e := range fixture.Tools {
		for _, name := range e.secureNames() {
			params[name] = "bound-" + name
		}
	}
	params["shard"] = 7 // declared as a number

	tools, err := filepath.Abs(fixtureFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{legacyVersion, modernVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, obj{
				"mcpServers": obj{"fixture": func() obj {
					s := stdioServer(tools, "")
					s["protocolVersion"] = version
					return s
				}()},
				"bindings": []obj{{"server": "fixture", "params": values(params)}},
			})
			r := run(t, nil, "--config", cfg, "tools", "--json")
			wantCode(t, r, 0)
			srv := decodeStdout[toolsDoc](t, r).server(t, "fixture")
			if srv.Status != "connected" || !srv.SecureParams {
				t.Fatalf("server status %q secureParams %t, want connected with the extension\n%s", srv.Status, srv.SecureParams, r)
			}
			if len(srv.Tools) != len(fixture.Tools) {
				t.Errorf("%d tools reported, the fixture has %d", len(srv.Tools), len(fixture.Tools))
			}
			for _, e := range fixture.Tools {
				tl := srv.tool(t, e.name())
				switch e.Expect {
				case "accept", "accept (warn)":
					if tl.Status != "active" {
						t.Errorf("%s (%s): status %q (%s), want active", e.ID, e.Expect, tl.Status, reasonOf(tl))
					}
					if strings.Contains(string(tl.InputSchema), "secureInputSchema") {
						t.Errorf("%s: the model's inputSchema mentions secureInputSchema: %s", e.ID, tl.InputSchema)
					}
				case "reject", "reject-recommended":
					if tl.Status != "excluded" {
						t.Errorf("%s (%s): status %q, want excluded", e.ID, e.Expect, tl.Status)
					}
					if strings.TrimSpace(reasonOf(tl)) == "" {
						t.Errorf("%s: excluded without a reason", e.ID)
					}
				default:
					t.Fatalf("%s: unknown expectation %q", e.ID, e.Expect)
				}
			}
		})
	}
}
