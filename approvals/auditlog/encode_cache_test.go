package auditlog

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// cachedLine is r encoded as a line sink encodes it, with risks, and
// whether its risk came from the cache.
func cachedLine(r *Record, risks *riskCache) (string, bool) {
	s := &risks.slots[nameSlot(r.Tool, len(risks.slots))]
	reused := r.Risk != nil && s.encoded != nil && sameRiskEncoding(r.Risk, &s.risk)
	return string(r.appendJSONWith(nil, risks)), reused
}

// cachedCall is a decision record from NewRecord, encoded once as a line
// sink encodes it, so that its risk is in the cache.
func cachedCall(t testing.TB) (*Record, *riskCache) {
	c, res := sinkCall()
	c.Call.ArgsCheck = rules.CheckArgs(c.Call.Args)
	c.Risk.SideEffects = []string{"cost"}
	c.Risk.ResultLabels = []string{risk.LabelUntrusted}
	res.Decision.Risk = c.Risk
	rec := NewRecord(c, res, time.Date(2026, 12, 3, 7, 1, 2, 345678900, time.UTC))
	risks := new(riskCache)
	if got, reused := cachedLine(rec, risks); got != string(rec.appendJSON(nil)) || reused {
		t.Fatalf("decision record (risk from the empty cache: %v)\n%s\nwant\n%s", reused, got, rec.appendJSON(nil))
	}
	return rec, risks
}

// A record's line through a sink's risk cache is its full encoding,
// whatever was changed since the cache was filled: the cached risk is
// written only for a risk equal in every field it encodes.
func TestRiskFromCacheIsTheFullEncoding(t *testing.T) {
	failClosed := risk.FailClosed()
	for _, c := range []struct {
		name   string
		change func(*Record)
		reused bool
	}{
		{"the result record", func(r *Record) { r.Phase, r.Result, r.DurationMs = PhaseResult, ResultOK, 3 }, true},
		{"the next call's, another risk value equal to it", func(r *Record) {
			e := *r.Risk
			e.SideEffects, e.ResultLabels = []string{"cost"}, []string{risk.LabelUntrusted}
			r.Risk, r.CallID = &e, "c2"
		}, true},
		{"the risk's notes, hints and inference (not encoded)", func(r *Record) {
			r.Risk.Notes, r.Risk.Hints, r.Risk.InferenceVersion = []string{"n"}, []string{"h"}, "infer/v1"
		}, true},
		{"no risk", func(r *Record) { r.Risk = nil }, false},
		{"another risk", func(r *Record) { r.Risk = &failClosed }, false},
		{"another tool (its own slot)", func(r *Record) { r.Tool = "list_orders" }, false},
		{"category changed in place", func(r *Record) { r.Risk.Category = risk.CategoryMutate }, false},
		{"risk level", func(r *Record) { r.Risk.RiskLevel = risk.RiskHigh }, false},
		{"side effects changed in place", func(r *Record) { r.Risk.SideEffects[0] = "state_loss" }, false},
		{"side effects added", func(r *Record) { r.Risk.SideEffects = append(r.Risk.SideEffects, "state_loss") }, false},
		{"no side effects", func(r *Record) { r.Risk.SideEffects = nil }, false},
		{"a source", func(r *Record) { r.Risk.Source.MinTrustLevel = risk.SourceDefault }, false},
		{"unclassified", func(r *Record) { r.Risk.Unclassified = true }, false},
		{"result labels changed in place", func(r *Record) { r.Risk.ResultLabels[0] = risk.LabelSensitive }, false},
		{"minimum trust", func(r *Record) { r.Risk.MinTrustLevel = 3 }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, risks := cachedCall(t)
			done := *rec
			c.change(&done)
			got, reused := cachedLine(&done, risks)
			if want := string(done.appendJSON(nil)); got != want {
				t.Fatalf("line\n%s\nwant\n%s", got, want)
			}
			if reused != c.reused {
				t.Errorf("cached risk reused: %v, want %v", reused, c.reused)
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
			rec, risks := cachedCall(t)
			before := string(rec.appendJSON(nil))
			setOther(t, reflect.ValueOf(rec.Risk).Elem().Field(i))
			full := string(rec.appendJSON(nil))
			if full == before {
				t.Fatalf("changing %s did not change the line", f.Name)
			}
			if got, _ := cachedLine(rec, risks); got != full {
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

// FuzzRiskFromCache: for any two risks, the second's line through a cache
// the first filled is its full encoding.
func FuzzRiskFromCache(f *testing.F) {
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
		risks := new(riskCache)
		rec := &Record{Tool: "t", Arguments: json.RawMessage(`{}`), Risk: mk(cat1, level1, effect1, source1, trust1, uncl1)}
		if got, want := string(rec.appendJSONWith(nil, risks)), string(rec.appendJSON(nil)); got != want {
			t.Fatalf("first record\n%s\nwant\n%s", got, want)
		}
		rec.Risk = mk(cat2, level2, effect2, source2, trust2, uncl2)
		if got, want := string(rec.appendJSONWith(nil, risks)), string(rec.appendJSON(nil)); got != want {
			t.Fatalf("second record\n%s\nwant\n%s", got, want)
		}
	})
}
