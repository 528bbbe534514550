package jsonlex

import (
	"encoding/json"
	"strings"
	"testing"
)

func validSeeds() []string {
	return append(tokenSeeds(),
		`-`, `-0`, `-01`, `01`, `0.`, `0.e1`, `1e`, `1e+`, `1E-7`, `1.5e+30`, `.5`, `+1`, `1x`, `truex`, `nul`, `falsе`,
		`"\u12g4"`, `"\u123"`, `"\q"`, "\"\x1f\"", "\"\x7f\"", `"\/\b\f\n\r\t\""`, `"a\\"`, `"a\\\"`,
		`{"a":}`, `{"a"}`, `{,}`, `[,1]`, `[1,,2]`, `{"a":1,}`, `{"a":1 "b":2}`, `{1:2}`, `[}`, `{]`, `[1]]`, `{}}`,
		"\ufeff{}", "{}\x00", " \t\r\n[ ] \n", "\f1", `{"a":[{"b":[true,false,null,-1.5e3,"x"]}]}`, `[[[[]]]]`, `[[[[]]]`,
		`""`, `"`, `{"`, `{"a":"`, `[1.0e]`, `[-]`, `[0-1]`, `{"\ud800":"\udfff"}`,
		`"abcdefghijklmnop\"qrstuvwx"`, `"abcdefghijklmnopqrstuvw\\"`, "\"abcdefghijklmnopq\x1frstuvwx\"", "\"ééééééééé\xff\xfe\x80\x7f~\"",
		`"abcdefgh"`, `"abcdefg"`, `"abcdefghijklmno`, `["abcdefghijklmnop","q"]`,
	)
}

// FuzzValid checks that Valid agrees with json.Valid on any input.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, want := Valid([]byte(doc)), json.Valid([]byte(doc))
		if got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", doc, got, want)
		}
		if end := ValidEnd([]byte(doc), 0, 0); want && end != len(strings.TrimRight(doc, " \t\r\n")) {
			t.Fatalf("ValidEnd(%q) = %d, the value ends at %d", doc, end, len(strings.TrimRight(doc, " \t\r\n")))
		}
	})
}

func TestValidSeeds(t *testing.T) {
	for _, doc := range validSeeds() {
		if got, want := Valid([]byte(doc)), json.Valid([]byte(doc)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid %v", doc, got, want)
		}
	}
}

// TestValidDepthLimit: encoding/json refuses nesting beyond 10,000 levels,
// so Valid does too, of arrays, objects and both.
func TestValidDepthLimit(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		docs := []string{
			strings.Repeat("[", n) + strings.Repeat("]", n),
			strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1),
			strings.Repeat(`[{"a":`, n/2) + strings.Repeat("}]", n/2),
		}
		for _, doc := range docs {
			if got, want := Valid([]byte(doc)), json.Valid([]byte(doc)); got != want {
				t.Errorf("depth %d (%.12s...): Valid %v, json.Valid %v", n, doc, got, want)
			}
		}
	}
}

// TestValidEndCountsOuterContainers: a value checked inside containers
// already open has that much less of the nesting limit.
func TestValidEndCountsOuterContainers(t *testing.T) {
	for _, tc := range []struct{ depth, outer, want int }{
		{maxDepth - 2, 2, 2 * (maxDepth - 2)}, {maxDepth - 1, 2, -1}, {maxDepth, 0, 2 * maxDepth}, {1, maxDepth, -1}, {0, maxDepth, 1},
	} {
		doc := strings.Repeat("[", tc.depth) + strings.Repeat("]", tc.depth)
		if tc.depth == 0 {
			doc = "1"
		}
		if got := ValidEnd([]byte(doc), 0, tc.outer); got != tc.want {
			t.Errorf("ValidEnd(%d levels, %d outer) = %d, want %d", tc.depth, tc.outer, got, tc.want)
		}
	}
}

func TestValidDoesNotAllocate(t *testing.T) {
	doc := []byte(tokenSeeds()[8])
	if allocs := testing.AllocsPerRun(100, func() { Valid(doc) }); allocs != 0 {
		t.Errorf("Valid allocates %v times per run, want 0", allocs)
	}
}

func BenchmarkValid(b *testing.B) {
	doc := []byte(`{"tools":[` + strings.Repeat(`{"name":"t","description":"`+strings.Repeat("Lists the items of a folder, with \\\"quotes\\\" and é. ", 8)+
		`","inputSchema":{"type":"object","properties":{"q":{"type":"string","enum":["a","b"]},"n":{"type":"integer","minimum":-1.5e3}},"required":["q"]}},`, 50) + `{}]}`)
	if !json.Valid(doc) {
		b.Fatal("invalid benchmark document")
	}
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			json.Valid(doc)
		}
	})
	b.Run("jsonlex", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			Valid(doc)
		}
	})
	b.Run("skip", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for range b.N {
			lx := New(doc)
			lx.SkipValue()
		}
	})
}

func BenchmarkTokens(b *testing.B) {
	doc := []byte(`{"tools":[` + strings.Repeat(`{"name":"t","description":"`+strings.Repeat("Lists the items of a folder, with \\\"quotes\\\" and é. ", 8)+
		`","inputSchema":{"type":"object","properties":{"q":{"type":"string","enum":["a","b"]},"n":{"type":"integer","minimum":-1.5e3}},"required":["q"]}},`, 50) + `{}]}`)
	b.SetBytes(int64(len(doc)))
	for range b.N {
		lx := New(doc)
		for kind, _ := lx.Next(); kind != End; kind, _ = lx.Next() {
		}
	}
}
