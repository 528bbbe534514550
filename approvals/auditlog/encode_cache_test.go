package auditlog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/internal/syncbuf"
	"github.com/google/go-cmp/cmp"
)

// cachedLine is r encoded as a line sink encodes it, with tools, and
// which of its tool's runs came from the cache.
func cachedLine(r *Record, tools *toolCache) (line string, names, tail bool) {
	s := &tools.slots[nameSlot(r.Tool, len(tools.slots))]
	names, tail = s.names != nil && s.sameNames(r), s.tail != nil && s.sameTail(r)
	return string(r.appendJSONWith(nil, tools)), names, tail
}

// cachedCall is a decision record from NewRecord, encoded once as a line
// sink encodes it, so that its tool is in the cache.
func cachedCall(t testing.TB) (*Record, *toolCache) {
	c, res := sinkCall()
	c.Call.ArgsCheck = rules.CheckArgs(c.Call.Args)
	c.Risk.SideEffects = []string{"cost"}
	c.Risk.ResultLabels = []string{risk.LabelUntrusted}
	res.Decision.Risk = c.Risk
	rec := NewRecord(c, res, time.Date(2026, 12, 3, 7, 1, 2, 345678900, time.UTC))
	tools := new(toolCache)
	if got, names, tail := cachedLine(rec, tools); got != string(rec.appendJSON(nil)) || names || tail {
		t.Fatalf("decision record (from the empty cache: %v, %v)\n%s\nwant\n%s", names, tail, got, rec.appendJSON(nil))
	}
	return rec, tools
}

// A record's line through a sink's tool cache is its full encoding,
// whatever was changed since the cache was filled: a cached run is
// written only for values equal in every field it encodes.
func TestToolFromCacheIsTheFullEncoding(t *testing.T) {
	failClosed := risk.FailClosed()
	for _, c := range []struct {
		name          string
		change        func(*Record)
		names, reused bool
	}{
		{"the result record", func(r *Record) { r.Phase, r.Result, r.DurationMs = PhaseResult, ResultOK, 3 }, true, true},
		{"the next call's, other arguments", func(r *Record) {
			r.CallID, r.Arguments = "c2", json.RawMessage(`{"id":"43"}`)
		}, true, true},
		{"server", func(r *Record) { r.Server = "other" }, false, true},
		{"definition hash", func(r *Record) { r.ToolDefHash = "sha256:y" }, false, true},
		{"exposed name", func(r *Record) { r.ExposedName = "other" }, false, true},
		{"secure params the same elsewhere", func(r *Record) { r.SecureParams = []string{"tenant_id"} }, true, true},
		{"secure params changed in place", func(r *Record) { r.SecureParams[0] = "region" }, true, false},
		{"no secure params", func(r *Record) { r.SecureParams = nil }, true, false},
		{"the next call's, another risk value equal to it", func(r *Record) {
			e := *r.Risk
			e.SideEffects, e.ResultLabels = []string{"cost"}, []string{risk.LabelUntrusted}
			r.Risk, r.CallID = &e, "c2"
		}, true, true},
		{"the risk's notes, hints and inference (not encoded)", func(r *Record) {
			r.Risk.Notes, r.Risk.Hints, r.Risk.InferenceVersion = []string{"n"}, []string{"h"}, "infer/v1"
		}, true, true},
		{"no risk", func(r *Record) { r.Risk = nil }, true, false},
		{"another risk", func(r *Record) { r.Risk = &failClosed }, true, false},
		{"another tool (its own slot)", func(r *Record) { r.Tool = "list_orders" }, false, false},
		{"category changed in place", func(r *Record) { r.Risk.Category = risk.CategoryMutate }, true, false},
		{"risk level", func(r *Record) { r.Risk.RiskLevel = risk.RiskHigh }, true, false},
		{"side effects changed in place", func(r *Record) { r.Risk.SideEffects[0] = "state_loss" }, true, false},
		{"side effects added", func(r *Record) { r.Risk.SideEffects = append(r.Risk.SideEffects, "state_loss") }, true, false},
		{"no side effects", func(r *Record) { r.Risk.SideEffects = nil }, true, false},
		{"a source", func(r *Record) { r.Risk.Source.MinTrustLevel = risk.SourceDefault }, true, false},
		{"unclassified", func(r *Record) { r.Risk.Unclassified = true }, true, false},
		{"result labels changed in place", func(r *Record) { r.Risk.ResultLabels[0] = risk.LabelSensitive }, true, false},
		{"minimum trust", func(r *Record) { r.Risk.MinTrustLevel = 3 }, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, tools := cachedCall(t)
			done := *rec
			c.change(&done)
			got, names, reused := cachedLine(&done, tools)
			if want := string(done.appendJSON(nil)); got != want {
				t.Fatalf("line\n%s\nwant\n%s", got, want)
			}
			if names != c.names || reused != c.reused {
				t.Errorf("cached names reused: %v, want %v; secure params and risk: %v, want %v", names, c.names, reused, c.reused)
			}
		})
	}
}

// Every field of risk.Effective that the line encodes, changed in place
// after the cache was filled, gives the full encoding's line: a field
// added to Effective cannot be left out of sameRiskEncoding unnoticed.
func TestEveryRiskFieldChangedInPlace(t *testing.T) {
	typ := reflect.TypeFor[risk.Effective]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Tag.Get("json") == "-" {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			rec, tools := cachedCall(t)
			before := string(rec.appendJSON(nil))
			setOther(t, reflect.ValueOf(rec.Risk).Elem().Field(i))
			full := string(rec.appendJSON(nil))
			if full == before {
				t.Fatalf("changing %s did not change the line", f.Name)
			}
			if got, _, _ := cachedLine(rec, tools); got != full {
				t.Fatalf("%s changed: line\n%s\nwant\n%s", f.Name, got, full)
			}
		})
	}
}

// setOther sets v to a value other than its own that encodes differently.
func setOther(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int:
		v.SetInt(v.Int() + 7)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice: // of strings
		v.Index(0).SetString(v.Index(0).String() + "x")
	case reflect.Struct: // the sources
		setOther(t, v.Field(v.NumField()-1))
	default:
		t.Fatalf("no other value for a %s", v.Type())
	}
}

// FuzzToolFromCache: for any two tools and risks, the second's line
// through a cache the first filled is its full encoding.
func FuzzToolFromCache(f *testing.F) {
	f.Add("read", "low", "cost", "catalogue", 1, false, "read", "low", "cost", "catalogue", 1, false)
	f.Add("read", "low", "cost", "catalogue", 1, false, "read", "low", "cost", "catalogue", 2, true)
	f.Add("r\u2028", "\xff", "", "<>&", 0, true, "r\u2028", "\xfe", "", "<>&", 0, true)
	f.Fuzz(func(t *testing.T, cat1, level1, effect1, source1 string, trust1 int, uncl1 bool, cat2, level2, effect2, source2 string, trust2 int, uncl2 bool) {
		mk := func(cat, level, effect, source string, trust int, uncl bool) *risk.Effective {
			e := risk.Effective{Category: risk.Category(cat), RiskLevel: risk.RiskLevel(level), SideEffects: []string{effect},
				MinTrustLevel: trust, Source: risk.AllSources(risk.Source(source)), Unclassified: uncl}
			if effect == "" {
				e.SideEffects = nil
			}
			return &e
		}
		tools := new(toolCache)
		// The fields' own values stand in for the names and the
		// secure parameters: the first record's and the second's.
		rec := &Record{Server: cat1, Tool: "t", ToolDefHash: level1, ExposedName: source1, Arguments: json.RawMessage(`{}`),
			SecureParams: []string{effect1}, Risk: mk(cat1, level1, effect1, source1, trust1, uncl1)}
		if got, want := string(rec.appendJSONWith(nil, tools)), string(rec.appendJSON(nil)); got != want {
			t.Fatalf("first record\n%s\nwant\n%s", got, want)
		}
		rec.Server, rec.ToolDefHash, rec.ExposedName, rec.SecureParams = cat2, level2, source2, []string{effect2}
		rec.Risk = mk(cat2, level2, effect2, source2, trust2, uncl2)
		if uncl2 && trust2%2 == 0 {
			rec.Risk = nil
		}
		if got, want := string(rec.appendJSONWith(nil, tools)), string(rec.appendJSON(nil)); got != want {
			t.Fatalf("second record\n%s\nwant\n%s", got, want)
		}
	})
}

// Goroutines writing records of a few tools through one sink (its cache
// shared, a slot passed over while another encoding holds it) write each
// line as the full encoding writes it.
func TestToolCacheUnderConcurrentWrites(t *testing.T) {
	var out syncbuf.Buffer
	sink := NewWriterSink(&out)
	const writers, each = 4, 200
	records := make([]*Record, 0, 6)
	for i, tool := range []string{"get_order", "list_orders", "cancel_order"} {
		for _, e := range []risk.Effective{risk.FailClosed(), {Category: risk.CategoryRead, RiskLevel: risk.RiskLow, SideEffects: []string{"cost"}}} {
			r := &Record{Server: "orders", Tool: tool, ToolDefHash: "sha256:" + tool, SecureParams: []string{"tenant_id"}[:i%2],
				Arguments: json.RawMessage(`{"id":"42"}`), Risk: &e, Phase: PhaseDecision}
			records = append(records, r)
		}
	}
	want := make(map[string]int) // each line, as often as it is written
	for w := range writers {
		for i := range each {
			want[string(records[(w+i)%len(records)].appendJSON(nil))]++
		}
	}
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			var err error
			for i := range each {
				if werr := sink.Write(t.Context(), records[(w+i)%len(records)]); werr != nil && err == nil {
					err = werr
				}
			}
			done <- err
		}()
	}
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	got := make(map[string]int)
	for _, l := range lines {
		got[l]++
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("lines (-the full encodings written +the sink's):\n%s", diff)
	}
}
