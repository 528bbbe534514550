package secureparams

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/expansion"
)

// realisticTool resembles what database/search servers list: a handful of
// described model parameters, nested filter objects, a $defs entry, three
// secure parameters with a routing header, and risk annotations.
var realisticTool = json.RawMessage(`{
  "name": "search_orders",
  "title": "Search orders",
  "description": "Search orders for the current tenant. Supports free text, status filters and date ranges; results are paginated.",
  "inputSchema": {
    "type": "object",
    "properties": {
      "query": {"type": "string", "description": "Free-text search query."},
      "status": {"type": "string", "enum": ["pending", "paid", "shipped", "cancelled"]},
      "range": {"$ref": "#/$defs/DateRange"},
      "filters": {"type": "array", "items": {"type": "object", "properties": {"field": {"type": "string"}, "op": {"enum": ["eq", "lt", "gt"]}, "value": {}}, "required": ["field", "op"]}},
      "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
      "cursor": {"type": "string"}
    },
    "required": ["query"],
    "additionalProperties": false,
    "$defs": {"DateRange": {"type": "object", "properties": {"from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"}}}}
  },
  "secureInputSchema": {
    "type": "object",
    "properties": {
      "tenant_id": {"type": "string", "description": "Tenant identifier supplied by the host application.", "minLength": 1},
      "region": {"type": "string", "enum": ["eu-west1", "us-east1", "us-west1"], "x-mcp-header": "Region"},
      "instance": {"type": "string", "pattern": "^[a-z][a-z0-9-]{2,62}$"}
    },
    "required": ["tenant_id", "region", "instance"],
    "additionalProperties": false
  },
  "annotations": {"readOnlyHint": true, "category": "read", "riskLevel": "low", "blastRadius": "tenant"}
}`)

func BenchmarkParseToolValidate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		tool, err := ParseTool(realisticTool)
		if err != nil {
			b.Fatal(err)
		}
		if err := Validate(tool); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseToolOnly isolates parsing and structural analysis from the
// JSON Schema compilation Validate adds.
func BenchmarkParseToolOnly(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTool(realisticTool); err != nil {
			b.Fatal(err)
		}
	}
}

// arguments2KB builds a model-style argument object of about 2 KB with
// nesting and arrays but no secure name.
func arguments2KB() json.RawMessage {
	var filters []string
	for i := 0; len(strings.Join(filters, ",")) < 1900; i++ {
		filters = append(filters, fmt.Sprintf(`{"field":"column_%d","op":"eq","value":"value number %d","meta":{"weight":%d}}`, i, i, i))
	}
	return json.RawMessage(`{"query":"orders from last week that were not shipped","limit":50,"filters":[` + strings.Join(filters, ",") + `]}`)
}

func BenchmarkFindSecureNames(b *testing.B) {
	args := arguments2KB()
	secure := []string{"tenant_id", "region", "instance", "project_id"}
	if got := FindSecureNames(args, secure); got != nil {
		b.Fatalf("benchmark premise: found %v", got)
	}
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		FindSecureNames(args, secure)
	}
}

func BenchmarkValueSchemaValidate(b *testing.B) {
	tool, err := ParseTool(realisticTool)
	if err != nil {
		b.Fatal(err)
	}
	vs, err := tool.ValueSchema()
	if err != nil {
		b.Fatal(err)
	}
	values := map[string]any{"tenant_id": "t-1", "region": "eu-west1", "instance": "db-prod-01"}
	b.ReportAllocs()
	for b.Loop() {
		if err := vs.Validate(values); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBenchmarkInputs(t *testing.T) {
	if n := len(arguments2KB()); n < 1800 || n > 2300 {
		t.Fatalf("arguments are %d bytes, want about 2 KB", n)
	}
	tool, err := ParseTool(realisticTool)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(tool); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCheckArguments is the per-call guard on typical small arguments.
func BenchmarkCheckArguments(b *testing.B) {
	args := json.RawMessage(`{"query":"SELECT id FROM orders WHERE status = 'open'","limit":50,"options":{"explain":false,"tags":["a","b"]}}`)
	secure := []string{"instance", "project_id"}
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckArguments(args, secure); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseAllocations pins the allocations of parsing and analysing one
// realistic definition (a catalog build does it thousands of times, and
// garbage collection was a large share of it): member names and plain
// strings share the definition's memory, and the scans keep their names
// on shared stacks. It was 784 before that.
func TestParseAllocations(t *testing.T) {
	raw := realisticTool
	if !json.Valid(raw) {
		t.Fatal("fixture is not valid JSON")
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := parseValidTool(raw); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 450 {
		t.Errorf("parsing a realistic definition allocates %.0f times, want at most 450", allocs)
	}
	t.Logf("%.0f allocations", allocs)
}

// BenchmarkParseToolDistinct parses definitions that all differ (the
// $defs entry's name varies, so the expansion memo cannot help, as in a
// cold catalog): the full analysis without and with the $ref-only
// expansion shortcut, and the single token pass, side by side in one run:
// the ratios are the shortcut's and the pass's gains.
func BenchmarkParseToolDistinct(b *testing.B) {
	const n = 1024
	defs := make([]json.RawMessage, n)
	for i := range defs {
		defs[i] = json.RawMessage(strings.ReplaceAll(string(realisticTool), "DateRange", fmt.Sprintf("DateRange%d", i)))
	}
	for _, mode := range []struct {
		name           string
		shortcut, pass bool
	}{{"full_expansion", false, false}, {"ref_only_shortcut", true, false}, {"single_pass", true, true}} {
		b.Run(mode.name, func(b *testing.B) {
			expansion.RefOnlyShortcut, singlePass = mode.shortcut, mode.pass
			defer func() { expansion.RefOnlyShortcut, singlePass = true, true }()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%n == 0 {
					expansion.ResetMemo() // each side analyses afresh
				}
				if _, err := ParseTool(defs[i%n]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
