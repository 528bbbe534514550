package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLine(t *testing.T) {
	for _, c := range []struct {
		line string
		name string
		want sample
	}{
		{"BenchmarkCallInProcess/bare-2         \t    6734\t    195260 ns/op\t   35029 B/op\t     502 allocs/op",
			"BenchmarkCallInProcess/bare", sample{"ns/op": 195260, "B/op": 35029, "allocs/op": 502}},
		{"BenchmarkConcurrency/sessions=1000-2   \t    6692\t    248175 ns/op\t      4029 calls/s\t   80819 B/op\t     901 allocs/op",
			"BenchmarkConcurrency/sessions=1000", sample{"ns/op": 248175, "calls/s": 4029, "B/op": 80819, "allocs/op": 901}},
		{"BenchmarkCredentialResolve/plugin_round_trip-2 5510 212355 ns/op 185.8 p50-µs 564.3 p99-µs",
			"BenchmarkCredentialResolve/plugin_round_trip", sample{"ns/op": 212355, "p50-µs": 185.8, "p99-µs": 564.3}},
		{"BenchmarkStartup/servers=10 1 358481091 ns/op", "BenchmarkStartup/servers=10", sample{"ns/op": 358481091}},
		{"BenchmarkCatalog/rebuild-2  1  3.9e+09 ns/op", "BenchmarkCatalog/rebuild", sample{"ns/op": 3.9e9}},
		// not result lines
		{"BenchmarkCallInProcess", "", nil},
		{"    call_test.go:52: protocol 2026-07-28", "", nil},
		{"BenchmarkX-2 10 12 B/op", "", nil},
		{"BenchmarkX-2 10 12 ns/op 7", "", nil},
		{"BenchmarkX-2 10 fast ns/op", "", nil},
		{"PASS", "", nil},
	} {
		name, got, ok := parseLine(c.line)
		if ok != (c.want != nil) || name != c.name || !cmp.Equal(got, c.want) {
			t.Errorf("parseLine(%q) = %q, %v, %v; want %q, %v", c.line, name, got, ok, c.name, c.want)
		}
	}
}

func TestMedian(t *testing.T) {
	r := results{
		"odd":   {{"ns/op": 5}, {"ns/op": 1}, {"ns/op": 3}},
		"even":  {{"ns/op": 4}, {"ns/op": 1}, {"ns/op": 3}, {"ns/op": 100}},
		"mixed": {{"ns/op": 1, "calls/s": 10}, {"ns/op": 2}},
	}
	for _, c := range []struct {
		name, unit string
		want       float64
		ok         bool
	}{
		{"odd", "ns/op", 3, true},
		{"even", "ns/op", 3.5, true},
		{"mixed", "calls/s", 10, true},
		{"mixed", "B/op", 0, false},
		{"missing", "ns/op", 0, false},
	} {
		got, ok := r.median(c.name, c.unit)
		if got != c.want || ok != c.ok {
			t.Errorf("median(%s, %s) = %v, %v; want %v, %v", c.name, c.unit, got, ok, c.want, c.ok)
		}
	}
}

func TestBenchPatternMatchesOnlyTheNamedBenchmarks(t *testing.T) {
	pattern := benchPattern([]string{"BenchmarkConcurrency/sessions=10"})
	top, sub, _ := strings.Cut(pattern, "/")
	topRe, subRe := regexp.MustCompile(top), regexp.MustCompile(sub)
	if !topRe.MatchString("BenchmarkConcurrency") || !subRe.MatchString("sessions=10") {
		t.Errorf("%s does not match its benchmark", pattern)
	}
	if subRe.MatchString("sessions=1000") || topRe.MatchString("BenchmarkConcurrencyX") {
		t.Errorf("%s matches other benchmarks", pattern)
	}
	multi := benchPattern([]string{"BenchmarkCatalog/rebuild", "BenchmarkCatalog/view_cold"})
	_, sub, _ = strings.Cut(multi, "/")
	subRe = regexp.MustCompile(sub)
	if !subRe.MatchString("rebuild") || !subRe.MatchString("view_cold") || subRe.MatchString("view_after_refresh_one") {
		t.Errorf("%s: wrong sub-benchmarks", multi)
	}
	// A benchmark without sub-benchmarks (BenchmarkServeProcess).
	if single := benchPattern([]string{"BenchmarkServeProcess"}); single != "^BenchmarkServeProcess$" {
		t.Errorf("a benchmark without subs: %s", single)
	}
}

func TestInvocationsInterleavePairs(t *testing.T) {
	g := group{separate: true, benches: []string{"B/a", "B/b"}}
	if got := invocations(g, 0); !cmp.Equal(got, [][]string{{"B/a"}, {"B/b"}}) {
		t.Errorf("round 0: %v", got)
	}
	if got := invocations(g, 1); !cmp.Equal(got, [][]string{{"B/b"}, {"B/a"}}) {
		t.Errorf("round 1: %v", got)
	}
	if got := invocations(group{benches: []string{"B/a", "B/b"}}, 1); !cmp.Equal(got, [][]string{{"B/a", "B/b"}}) {
		t.Errorf("shared process: %v", got)
	}
	if (group{paired: true}).roundsFor(5) != 5 || (group{}).roundsFor(5) != 3 || (group{}).roundsFor(2) != 2 {
		t.Error("roundsFor")
	}
}

func TestEvaluate(t *testing.T) {
	good := results{
		"BenchmarkCallInProcess/bare":                  {{"ns/op": 100e3, "allocs/op": 400}, {"ns/op": 90e3, "allocs/op": 400}, {"ns/op": 110e3, "allocs/op": 400}},
		"BenchmarkCallInProcess/host":                  {{"ns/op": 104e3, "allocs/op": 420}, {"ns/op": 94e3, "allocs/op": 420}, {"ns/op": 114e3, "allocs/op": 420}},
		"BenchmarkCallStdio/bare":                      {{"ns/op": 100e3}},
		"BenchmarkCallStdio/host":                      {{"ns/op": 130e3}}, // separate runs drifted; the interleaved ratio decides
		"BenchmarkCallStdio/interleaved":               {{"ns/op": 1, "host/bare": 1.05}, {"ns/op": 1, "host/bare": 1.20}, {"ns/op": 1, "host/bare": 1.04}},
		"BenchmarkCallHTTP/bare":                       {{"ns/op": 100e3}},
		"BenchmarkCallHTTP/host":                       {{"ns/op": 190e3}}, // reported only: no target
		"BenchmarkCatalog/build_cold":                  {{"ns/op": 20e6}},
		"BenchmarkCatalog/floor_json_valid":            {{"ns/op": 7e6}},
		"BenchmarkCatalog/rebuild":                     {{"ns/op": 300e6}}, // context only: no target
		"BenchmarkCatalog/view_after_refresh_one":      {{"ns/op": 0.5e6}},
		"BenchmarkIdleSessions/opened":                 {{"ns/op": 1, "B/session": 2048}},
		"BenchmarkConcurrency/sessions=10":             {{"ns/op": 1, "calls/s": 1000}},
		"BenchmarkConcurrency/sessions=1000":           {{"ns/op": 1, "calls/s": 850}},
		"BenchmarkCredentialResolve/cached":            {{"ns/op": 150}},
		"BenchmarkCredentialResolve/plugin_round_trip": {{"ns/op": 1, "p50-µs": 200}},
		"BenchmarkCredentialResolve/concurrent_misses": {{"ns/op": 1, "plugin-calls/op": 1}, {"ns/op": 1, "plugin-calls/op": 1}},
		"BenchmarkStartup/servers=1":                   {{"ns/op": 320e6}},
		"BenchmarkStartup/servers=10":                  {{"ns/op": 400e6}},
		"BenchmarkWholeRun": {{"ns/op": 1, "host/floor-wall": 0.98, "host/floor-cpu": 1.0, "host-peak-MiB": 24.5, "version-peak-MiB": 15,
			"tools-wall-ms": 29, "per-server-cpu-ms": 14.9, "supervisor-cpu-ms": 1.9}},
		"BenchmarkAuditThroughput/file_sink":  {{"ns/op": 1, "decisions/s": 40000}},
		"BenchmarkAuditCall/file_sink":        {{"ns/op": 1, "cpu-ns/op": 4500}},
		"BenchmarkPolicyExpr/sql_select":      {{"ns/op": 1, "p50-µs": 8, "p99-µs": 90}},
		"BenchmarkApprovalRoundTrip/postgres": {{"ns/op": 1, "p50-ms": 2.5, "p99-ms": 20}},
		"BenchmarkAuditAppend/postgres":       {{"ns/op": 1, "records/s": 6000}},
		"BenchmarkSandboxSetup/network=none":  {{"ns/op": 1, "p50-µs": 500, "p99-µs": 9000}},
		"BenchmarkCheckpointStep/postgres":    {{"ns/op": 1, "p50-ms": 0.9}},
		"BenchmarkCheckpointStep/sqlite":      {{"ns/op": 1, "p50-ms": 0.25}},
		"BenchmarkDurableRestart/sqlite":      {{"ns/op": 1, "s/restart": 2.5}},
		"BenchmarkDurableRestart/postgres":    {{"ns/op": 1, "s/restart": 4.9}},
		"BenchmarkDurableTurn/memory":         {{"ns/op": 1, "cpu-ns/op": 1e6}},
		"BenchmarkDurableTurn/postgres":       {{"ns/op": 1, "cpu-ns/op": 1.4e6}},
		"BenchmarkServeProcess":               {{"ns/op": 1, "(library+floor)/serve": 0.9}},
		"BenchmarkServeDurable":               {{"ns/op": 1, "postgres/memory": 1.4}},
	}
	checks := map[string]error{"others untouched": nil}
	for _, x := range evaluate(good, checks) {
		if x.target == "—" {
			if x.status != "—" || x.measured != "1.90" {
				t.Errorf("%s: %s (%s), want a ratio reported without a verdict", x.figure, x.status, x.measured)
			}
			continue
		}
		if x.status != "PASS" {
			t.Errorf("%s: %s (%s), want PASS", x.figure, x.status, x.measured)
		}
	}

	bad := results{
		"BenchmarkCallInProcess/bare":                  {{"ns/op": 100e3, "allocs/op": 400}},
		"BenchmarkCallInProcess/host":                  {{"ns/op": 106e3, "allocs/op": 431}},
		"BenchmarkCallStdio/bare":                      {{"ns/op": 100e3}},
		"BenchmarkCallStdio/host":                      {{"ns/op": 100e3}},
		"BenchmarkCallStdio/interleaved":               {{"ns/op": 1, "host/bare": 1.06}},
		"BenchmarkCatalog/build_cold":                  {{"ns/op": 26e6}},
		"BenchmarkCatalog/floor_json_valid":            {{"ns/op": 8e6}},   // 3.25 × the floor
		"BenchmarkCatalog/rebuild":                     {{"ns/op": 1e6}},   // context only: fast, but not the figure
		"BenchmarkCatalog/view_after_refresh_one":      {{"ns/op": 0.5e6}}, // fast, but the untouched check failed
		"BenchmarkIdleSessions/opened":                 {{"ns/op": 1, "B/session": 10*1024 + 1}},
		"BenchmarkConcurrency/sessions=10":             {{"ns/op": 1, "calls/s": 1000}},
		"BenchmarkConcurrency/sessions=1000":           {{"ns/op": 1, "calls/s": 799}},
		"BenchmarkCredentialResolve/cached":            {{"ns/op": 1001}},
		"BenchmarkCredentialResolve/plugin_round_trip": {{"ns/op": 1, "p50-µs": 301}},
		"BenchmarkCredentialResolve/concurrent_misses": {{"ns/op": 1, "plugin-calls/op": 1}, {"ns/op": 1, "plugin-calls/op": 2}},
		"BenchmarkStartup/servers=1":                   {{"ns/op": 300e6}},
		"BenchmarkStartup/servers=10":                  {{"ns/op": 451e6}},
		"BenchmarkWholeRun": {{"ns/op": 1, "host/floor-wall": 0.9, "host/floor-cpu": 1.01, "host-peak-MiB": 25.1, "version-peak-MiB": 15.1,
			"tools-wall-ms": 31, "per-server-cpu-ms": 15.1, "supervisor-cpu-ms": 2.1}},
		"BenchmarkAuditThroughput/file_sink":  {{"ns/op": 1, "decisions/s": 19999}},
		"BenchmarkAuditCall/file_sink":        {{"ns/op": 1, "cpu-ns/op": 6001}},
		"BenchmarkPolicyExpr/sql_select":      {{"ns/op": 1, "p50-µs": 20.1}},
		"BenchmarkApprovalRoundTrip/postgres": {{"ns/op": 1, "p50-ms": 5.1}},
		"BenchmarkAuditAppend/postgres":       {{"ns/op": 1, "records/s": 4999}},
		"BenchmarkSandboxSetup/network=none":  {{"ns/op": 1, "p50-µs": 2001}},
		"BenchmarkCheckpointStep/postgres":    {{"ns/op": 1, "p50-ms": 1.1}},
		"BenchmarkCheckpointStep/sqlite":      {{"ns/op": 1, "p50-ms": 0.31}},
		"BenchmarkDurableRestart/sqlite":      {{"ns/op": 1, "s/restart": 5.1}},
		"BenchmarkDurableRestart/postgres":    {{"ns/op": 1, "s/restart": 9}},
		"BenchmarkDurableTurn/memory":         {{"ns/op": 1, "cpu-ns/op": 1e6}},
		"BenchmarkDurableTurn/postgres":       {{"ns/op": 1, "cpu-ns/op": 1.6e6}},
		"BenchmarkServeProcess":               {{"ns/op": 1, "(library+floor)/serve": 0.8}},
		"BenchmarkServeDurable":               {{"ns/op": 1, "postgres/memory": 1.6}},
	}
	failed := map[string]error{"others untouched": errors.New("replaced")}
	for _, x := range evaluate(bad, failed) {
		if x.status != "FAIL" && x.target != "—" {
			t.Errorf("%s: %s (%s), want FAIL", x.figure, x.status, x.measured)
		}
	}

	for _, x := range evaluate(results{}, nil) {
		if x.status != noData {
			t.Errorf("%s: %s without results, want %q", x.figure, x.status, noData)
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{duration(162.6), "163 ns"},
		{duration(195260), "195 µs"},
		{duration(3.9e6), "3.9 ms"},
		{duration(3905514516), "3.91 s"},
		{bytesSize(728), "728 B"},
		{bytesSize(1489), "1.5 KiB"},
		{bytesSize(3 << 20), "3.0 MiB"},
		{number(43315.4), "43315"},
		{number(1), "1"},
		{number(185.8), "186"},
		{number(1.25), "1.25"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestCatalogTargetIsRelativeToTheFloor: the cold build passes or fails
// by its ratio to json.Valid of the same bytes in the same run, not by
// its absolute time, and has no verdict without that floor.
func TestCatalogTargetIsRelativeToTheFloor(t *testing.T) {
	tests := []struct {
		build, valid float64
		want         string
	}{
		{20e6, 5e6, "FAIL"},    // 20 ms, but 4 × the floor
		{300e6, 110e6, "PASS"}, // 300 ms, 2.7 × the floor
		{30e6, 10e6, "PASS"},   // exactly 3 ×
		{20e6, 0, noData},      // no floor measured
	}
	for _, tc := range tests {
		r := results{"BenchmarkCatalog/build_cold": {{"ns/op": tc.build}}}
		if tc.valid > 0 {
			r["BenchmarkCatalog/floor_json_valid"] = []sample{{"ns/op": tc.valid}}
		}
		for _, x := range evaluate(r, nil) {
			if strings.HasPrefix(x.figure, "catalog + model view build") && x.status != tc.want {
				t.Errorf("build %g ns, floor %g ns: %s (%s), want %s", tc.build, tc.valid, x.status, x.measured, tc.want)
			}
		}
	}
}

// TestGroupsRunOneTopLevelBenchmark: a group's benchmarks are run by one
// -test.bench pattern, which names a single top-level benchmark.
func TestGroupsRunOneTopLevelBenchmark(t *testing.T) {
	for _, g := range groups {
		top, _, _ := strings.Cut(g.benches[0], "/")
		for _, b := range g.benches {
			if t2, _, _ := strings.Cut(b, "/"); t2 != top {
				t.Errorf("group %s runs %s and %s: one top-level benchmark a group", g.name, top, t2)
			}
		}
	}
}
