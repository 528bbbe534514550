package host

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// TestAuditAlsoSeesEveryRecord: Options.AuditAlso gets each record after
// the main sink; its failure stops the call like the main sink's; the main
// sink's sticky failure still refuses calls before anyone is asked; the
// host does not close it.
func TestAuditAlsoSeesEveryRecord(t *testing.T) {
	tests := []struct {
		name               string
		mainFail, alsoFail error
		wantKind           Kind
		wantMain, wantAlso int
	}{
		{"both get the records", nil, nil, "", 2, 2},
		{"a failing second sink stops the call", nil, errors.New("index full"), KindInternal, 1, 0},
		{"a failed main sink refuses the call first", errors.New("disk full"), nil, KindInternal, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(riskTools)})
			cfg := &config.Config{
				MCPServers: map[string]*config.Server{"shop": {URL: url, Type: config.TransportHTTP, TrustAnnotations: true}},
				Approvals:  rules.Config{Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}}},
			}
			cfg.ApplyDefaults()
			main := &recordSink{fail: tc.mainFail}
			also := &recordSink{fail: tc.alsoFail}
			h, err := New(Options{Config: cfg, Audit: main, AuditAlso: also})
			if err != nil {
				t.Fatal(err)
			}
			s := h.NewSession(SessionOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = s.CallTool(ctx, "shop", "get_order", json.RawMessage(`{"id":"1"}`))
			if (tc.wantKind == "") != (err == nil) || (err != nil && KindOf(err) != tc.wantKind) {
				t.Errorf("call: %v, want kind %q", err, tc.wantKind)
			}
			main.mu.Lock()
			gotMain := len(main.records)
			main.mu.Unlock()
			also.mu.Lock()
			gotAlso := len(also.records)
			also.mu.Unlock()
			if gotMain != tc.wantMain || gotAlso != tc.wantAlso {
				t.Errorf("records: main %d, also %d; want %d and %d", gotMain, gotAlso, tc.wantMain, tc.wantAlso)
			}
			_ = h.Close()
		})
	}
}
