package llmview

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

// The incremental Namer agrees with ExposedNames on the whole catalog after
// every change, whatever the order of changes.
func TestNamerAgreesWithExposedNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := []string{"get", "Get", "list", "a.b", "x y", "drop", strings.Repeat("long", 20), "t"}
	serverNames := []string{"s1", "s2", "S1", "a_b", "a.b", "x"}
	n := NewNamer()
	catalog := map[string][]string{}
	for step := range 300 {
		server := serverNames[rng.IntN(len(serverNames))]
		var tools []string
		for _, tool := range pool {
			if rng.IntN(2) == 0 {
				tools = append(tools, tool)
			}
		}
		if rng.IntN(5) == 0 {
			tools = nil
		}
		n.SetServer(server, tools)
		if tools == nil {
			delete(catalog, server)
		} else {
			catalog[server] = tools
		}
		var all []Ref
		for s, ts := range catalog {
			for _, tool := range ts {
				all = append(all, Ref{s, tool})
			}
		}
		want := ExposedNames(all)
		seen := map[string]bool{}
		for _, r := range all {
			got := n.Name(r)
			if !validName.MatchString(got) {
				t.Fatalf("step %d: %v has invalid name %q", step, r, got)
			}
			if seen[strings.ToLower(got)] {
				t.Fatalf("step %d: name %q used twice", step, got)
			}
			seen[strings.ToLower(got)] = true
			if got != want[r] {
				t.Fatalf("step %d: %v named %q, ExposedNames says %q", step, r, got, want[r])
			}
		}
		if len(n.names) != len(all) {
			t.Fatalf("step %d: %d names kept for %d tools", step, len(n.names), len(all))
		}
	}
}

func TestNamerReportsOnlyTheChangedServers(t *testing.T) {
	n := NewNamer()
	for i := range 50 {
		n.SetServer(fmt.Sprintf("s%02d", i), []string{"get", "put"})
	}
	changed := n.SetServer("s07", []string{"get", "delete"})
	if len(changed) != 1 || !changed["s07"] {
		t.Errorf("changed = %v, want only s07", changed)
	}
	// A new server whose plain names collide (case-insensitively) with
	// another's renames both.
	n.SetServer("A", []string{"x"})
	changed = n.SetServer("a", []string{"x"})
	if !changed["A"] || !changed["a"] {
		t.Errorf("collision did not rename both: %v", changed)
	}
}

// A server re-listing the same tool names (in any order, with duplicates)
// renames nothing and reports no change.
func TestNamerSameToolsChangeNothing(t *testing.T) {
	n := NewNamer()
	n.SetServer("s", []string{"get", "put", "Get"})
	n.SetServer("t", []string{"get"})
	before := maps.Clone(n.names)
	if changed := n.SetServer("s", []string{"Get", "put", "get", "put"}); changed != nil {
		t.Errorf("changed = %v, want nil", changed)
	}
	if !maps.Equal(n.names, before) {
		t.Errorf("names changed: %v -> %v", before, n.names)
	}
	if changed := n.SetServer("gone", nil); changed != nil {
		t.Errorf("removing an unknown server: changed = %v, want nil", changed)
	}
	if changed := n.SetServer("s", []string{"get", "put"}); !changed["s"] {
		t.Errorf("dropping a tool: changed = %v, want s", changed)
	}
}

// BenchmarkNamerCold names a new catalog of 100 servers of 100 tools, as a
// host's first view does.
func BenchmarkNamerCold(b *testing.B) {
	servers := make([][]string, 100)
	for i := range servers {
		for j := range 100 {
			servers[i] = append(servers[i], fmt.Sprintf("tool_%d_%03d", i, j))
		}
	}
	b.ReportAllocs()
	for range b.N {
		n := NewNamer()
		n.Reserve(len(servers), len(servers)*len(servers[0]))
		for i, tools := range servers {
			n.SetServer(fmt.Sprintf("srv%03d", i), tools)
		}
	}
}

// Reserve only sizes an empty Namer: on one that names tools already it
// changes nothing.
func TestNamerReserveKeepsNames(t *testing.T) {
	n := NewNamer()
	n.Reserve(2, 10)
	n.SetServer("s1", []string{"a", "b"})
	n.Reserve(2, 10)
	n.SetServer("s2", []string{"a"})
	want := ExposedNames([]Ref{{"s1", "a"}, {"s1", "b"}, {"s2", "a"}})
	for r, name := range want {
		if got := n.Name(r); got != name {
			t.Errorf("%v: named %q, want %q", r, got, name)
		}
	}
}
