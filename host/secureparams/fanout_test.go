package secureparams

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/expansion"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
)

// FuzzFanOutByTokens: schemaExpansion reading what may fan out from the
// member names the scan saw gives the same cost and problem as searching
// the schema's text, which also counted keywords in string values and any
// escape (and so analysed those schemas in full).
func FuzzFanOutByTokens(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","description":"line\nnext \"q\""}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"string","description":"a\tb"}}}`,
		`{"type":"array","items":{"type":"string"},"additionalItems":{"type":"string"},"description":"\u0041"}`,
		`{"type":"array","prefixItems":[{"type":"string"}],"items":[{"type":"string"}],"title":"\\"}`,
		`{"type":"object","properties":{"not":{"enum":["$ref","allOf"]},"if":{"const":"then"}}}`,
		`{"type":"object","properties":{"x":{"\u0024ref":"#/$defs/d"}},"$defs":{"d":{}}}`,
		`{"type":"object","properties":{"x":{"a\u006cl\u004ff":[{"type":"string"},{"$ref":"#"}]}}}`,
		`{"default":{"anyOf":[1,2]},"examples":[{"$ref":"#/x"}],"description":"\/"}`,
		defsBomb(6, `"properties":{"q":{"$ref":"#/$defs/a0"}},"description":"\n"`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		raw := json.RawMessage(schema)
		if !json.Valid(raw) {
			return
		}
		scan, p := scanSchema(raw, "inputSchema", new(int(MaxSchemaNodes)), mayBeInvalid)
		if p != nil {
			return
		}
		root, err := schemajson.DecodeValid(raw)
		if err != nil {
			return
		}
		run := func(byTokens bool) (int64, problem) {
			expansion.FanOutByTokens = byTokens
			defer func() { expansion.FanOutByTokens = true }()
			expansion.ResetMemo() // each side analyses afresh
			cost, p := schemaExpansion("inputSchema", raw, root, scan)
			if p != nil {
				return cost, *p
			}
			return cost, problem{}
		}
		textCost, textProblem := run(false)
		tokenCost, tokenProblem := run(true)
		if textCost != tokenCost || textProblem != tokenProblem {
			t.Fatalf("%s: by text %d %+v, by tokens %d %+v", schema, textCost, textProblem, tokenCost, tokenProblem)
		}
	})
}
