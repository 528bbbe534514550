package expansion

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
)

// anyOfChain is a root $ref into n $defs, each applying the next one
// twice through anyOf: 2^n applications unfolded.
func anyOfChain(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","$ref":"#/$defs/a0","$defs":{`)
	for i := range n - 1 {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"string"}}}`, n-1)
	return b.String()
}

// TestSchemaExpansionAnalysisIsBounded: the analysis of a bomb stops at the
// budget instead of unfolding it.
func TestSchemaExpansionAnalysisIsBounded(t *testing.T) {
	for _, schema := range []string{
		anyOfChain(60),
		`{"type":"object","anyOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`,
	} {
		root, err := schemajson.DecodeJSON([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		x := &expansion{label: "inputSchema", root: root, nodes: map[uintptr]*xnode{}}
		st := map[*xnode]int64{x.nodeAt(root, ""): 1}
		for range guard.MaxArgumentDepth {
			closure, _, p := x.close(st)
			if p != nil {
				break
			}
			children := x.children(closure)
			if len(children) == 0 {
				t.Fatalf("%s: no bound reached", schema[:40])
			}
			st = children[0]
		}
		if x.steps > 2*MaxSchemaExpansion {
			t.Fatalf("analysis took %d steps, want at most %d", x.steps, 2*MaxSchemaExpansion)
		}
	}
}
