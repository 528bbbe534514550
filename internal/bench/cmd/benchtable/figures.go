package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// row is one line of the figures table.
type row struct {
	figure   string
	measured string
	target   string
	status   string // PASS, FAIL, or "no data"
	detail   string
}

func status(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

const noData = "no data"

// catalogFloorRatio is the cold catalog build's target: at most this many
// times encoding/json validating the same tools/list results.
const catalogFloorRatio = 3.0

// evaluate turns the medians into the figures of the performance issue.
// checks are the results of the normal tests a figure depends on.
func evaluate(r results, checks map[string]error) []row {
	var rows []row
	ns := func(name string) (float64, bool) { return r.median(name, "ns/op") }

	for _, c := range []struct {
		figure, prefix string
		limit          float64 // 0: reported, no target
	}{
		{"per-call host overhead, in-process", "BenchmarkCallInProcess", 1.05},
		{"per-call host overhead, stdio", "BenchmarkCallStdio", 1.05},
		{"per-call host overhead, loopback HTTP (reported)", "BenchmarkCallHTTP", 0},
	} {
		x := row{figure: c.figure, target: fmt.Sprintf("host/bare ≤ %.2f", c.limit), status: noData}
		if c.limit == 0 {
			x.target = "—"
		}
		// The ratio is the interleaved benchmark's (calls alternating one
		// by one see the same machine); separate runs are the fallback.
		ratio, ok := r.median(c.prefix+"/interleaved", "host/bare")
		hostNs, ok1 := ns(c.prefix + "/host")
		bareNs, ok2 := ns(c.prefix + "/bare")
		if !ok && ok1 && ok2 {
			ratio, ok = hostNs/bareNs, true
		}
		if ok {
			x.measured = fmt.Sprintf("%.2f", ratio)
			x.status = status(ratio <= c.limit)
			if c.limit == 0 {
				x.status = "—"
			}
			var parts []string
			if h, okH := r.median(c.prefix+"/interleaved", "host-ns/call"); okH {
				if b, okB := r.median(c.prefix+"/interleaved", "bare-ns/call"); okB {
					parts = append(parts, fmt.Sprintf("interleaved: host %s, bare %s a call", duration(h), duration(b)))
				}
			}
			if cpu, ok := r.median(c.prefix+"/interleaved", "cpu-host/bare"); ok {
				parts = append(parts, fmt.Sprintf("CPU %.2f", cpu))
			}
			if floor, ok := r.median(c.prefix+"/interleaved_floor", "floor/bare"); ok {
				// What a host that only wrote its two audit records would
				// reach: bare calls each followed by two write(2)s.
				parts = append(parts, fmt.Sprintf("floor (bare + the two audit writes) %.2f", floor))
			}
			if ok1 && ok2 {
				parts = append(parts, fmt.Sprintf("separate runs: host %s, bare %s (%.2f)", duration(hostNs), duration(bareNs), hostNs/bareNs))
			}
			x.detail = strings.Join(parts, "; ")
			plain, ok1 := ns(c.prefix + "/host_plain")
			barePlain, ok2 := ns(c.prefix + "/bare_plain")
			if ok1 && ok2 {
				x.detail += fmt.Sprintf("; without secure params %s vs %s (%.2f)", duration(plain), duration(barePlain), plain/barePlain)
			}
		}
		rows = append(rows, x)
	}

	allocs := row{figure: "allocations per host call (in-process)", target: "host − bare ≤ 30", status: noData}
	hostAllocs, ok1 := r.median("BenchmarkCallInProcess/host", "allocs/op")
	bareAllocs, ok2 := r.median("BenchmarkCallInProcess/bare", "allocs/op")
	if ok1 && ok2 {
		diff := hostAllocs - bareAllocs
		allocs.measured = fmt.Sprintf("%.0f", diff)
		allocs.status = status(diff <= 30)
		allocs.detail = fmt.Sprintf("host %.0f, bare %.0f allocs/op", hostAllocs, bareAllocs)
		if h, ok := r.median("BenchmarkCallStdio/host", "allocs/op"); ok {
			if b, ok := r.median("BenchmarkCallStdio/bare", "allocs/op"); ok {
				allocs.detail += fmt.Sprintf("; stdio: host %.0f, bare %.0f (+%.0f)", h, b, h-b)
			}
		}
	}
	rows = append(rows, allocs)

	// The cold build's target is relative to encoding/json validating the
	// same bytes in the same run (issue #26), so that a loaded machine
	// slows both alike; without that floor there is no verdict.
	build := row{figure: "catalog + model view build, 100 servers × 100 tools", target: fmt.Sprintf("≤ %g × json.Valid of the same bytes", catalogFloorRatio), status: noData}
	if v, ok := ns("BenchmarkCatalog/build_cold"); ok {
		build.measured = duration(v)
		if valid, ok := ns("BenchmarkCatalog/floor_json_valid"); ok && valid > 0 {
			build.measured = fmt.Sprintf("%s (%.1f × json.Valid)", duration(v), v/valid)
			build.status = status(v <= catalogFloorRatio*valid)
		}
		var parts []string
		if rebuild, ok := ns("BenchmarkCatalog/rebuild"); ok {
			parts = append(parts, fmt.Sprintf("re-listing all over loopback with the view %s", duration(rebuild)))
		}
		if bare, ok := ns("BenchmarkCatalog/bare_list_all"); ok {
			parts = append(parts, fmt.Sprintf("bare mcp-go listing alone %s", duration(bare)))
		}
		if cold, ok := ns("BenchmarkCatalog/view_cold"); ok {
			parts = append(parts, fmt.Sprintf("first view of a new session %s", duration(cold)))
		}
		if valid, ok := ns("BenchmarkCatalog/floor_json_valid"); ok {
			parts = append(parts, fmt.Sprintf("encoding/json only validating the same results %s", duration(valid)))
		}
		if decode, ok := ns("BenchmarkCatalog/floor_json_decode"); ok {
			parts = append(parts, fmt.Sprintf("decoding them %s", duration(decode)))
		}
		build.detail = strings.Join(parts, "; ")
	}
	rows = append(rows, build)

	refresh := row{figure: "refresh one server, then Session.View", target: "≤ 1 ms; other 99 untouched", status: noData}
	if v, ok := ns("BenchmarkCatalog/view_after_refresh_one"); ok {
		untouched, checked := checks["others untouched"]
		refresh.measured = duration(v)
		refresh.status = status(v <= 1e6 && checked && untouched == nil)
		switch {
		case !checked:
			refresh.detail = "untouched check not run"
		case untouched != nil:
			refresh.detail = "others untouched: FAIL"
		default:
			refresh.detail = "others untouched: yes (TestRefreshOneServerLeavesOthersUntouched)"
		}
		if both, ok := ns("BenchmarkCatalog/refresh_one_and_view"); ok {
			refresh.detail += fmt.Sprintf("; with the re-listing %s", duration(both))
		}
	}
	rows = append(rows, refresh)

	idle := row{figure: "idle sessions (10,000 on one Host)", target: "≤ 10 KiB heap each", status: noData}
	if v, ok := r.median("BenchmarkIdleSessions/opened", "B/session"); ok {
		idle.measured = bytesSize(v)
		idle.status = status(v <= 10*1024)
		if after, ok := r.median("BenchmarkIdleSessions/after_one_call", "B/session"); ok {
			idle.detail = fmt.Sprintf("after one call each %s", bytesSize(after))
		}
	}
	rows = append(rows, idle)

	conc := row{figure: "concurrency: 1,000 sessions vs 10", target: "throughput ≥ 80 %", status: noData}
	at10, ok1 := r.median("BenchmarkConcurrency/sessions=10", "calls/s")
	at1000, ok2 := r.median("BenchmarkConcurrency/sessions=1000", "calls/s")
	if ok1 && ok2 {
		conc.measured = fmt.Sprintf("%.0f %%", 100*at1000/at10)
		conc.status = status(at1000/at10 >= 0.8)
		conc.detail = fmt.Sprintf("%.0f calls/s at 1,000, %.0f at 10", at1000, at10)
	}
	rows = append(rows, conc)

	cached := row{figure: "credential resolve: cached hit", target: "≤ 1 µs", status: noData}
	if v, ok := ns("BenchmarkCredentialResolve/cached"); ok {
		cached.measured = duration(v)
		cached.status = status(v <= 1000)
	}
	rows = append(rows, cached)

	trip := row{figure: "credential resolve: plugin round trip", target: "p50 ≤ 300 µs", status: noData}
	if v, ok := r.median("BenchmarkCredentialResolve/plugin_round_trip", "p50-µs"); ok {
		trip.measured = duration(v * 1e3)
		trip.status = status(v <= 300)
		if p99, ok := r.median("BenchmarkCredentialResolve/plugin_round_trip", "p99-µs"); ok {
			trip.detail = "p99 " + duration(p99*1e3)
		}
	}
	rows = append(rows, trip)

	misses := row{figure: "credential resolve: 1,000 concurrent misses of one key", target: "exactly 1 plugin call", status: noData}
	if samples := r["BenchmarkCredentialResolve/concurrent_misses"]; len(samples) > 0 {
		exact := true
		var seen []string
		for _, s := range samples {
			calls, ok := s["plugin-calls/op"]
			exact = exact && ok && calls == 1
			seen = append(seen, fmt.Sprintf("%g", calls))
		}
		misses.measured = strings.Join(slices.Compact(seen), ", ")
		misses.status = status(exact)
		if v, ok := ns("BenchmarkCredentialResolve/concurrent_misses"); ok {
			misses.detail = fmt.Sprintf("all 1,000 served in %s", duration(v))
		}
	}
	rows = append(rows, misses)

	start := row{figure: "startup: `agenthost tools`, 10 stdio servers × 300 ms start", target: "≤ 1.3 × one server", status: noData} // issue #26
	one, ok1 := ns("BenchmarkStartup/servers=1")
	ten, ok2 := ns("BenchmarkStartup/servers=10")
	if ok1 && ok2 {
		start.measured = fmt.Sprintf("%.2f", ten/one)
		start.status = status(ten/one <= 1.3)
		start.detail = fmt.Sprintf("10 servers %s, one server %s", duration(ten), duration(one))
	}
	rows = append(rows, start)
	rows = append(rows, wholeRunRows(r)...)

	sandbox := row{figure: "sandbox setup per stdio server start (Landlock + seccomp + rlimits)", target: "p50 ≤ 2 ms", status: noData}
	if v, ok := r.median("BenchmarkSandboxSetup/network=none", "p50-µs"); ok {
		sandbox.measured = duration(v * 1e3)
		sandbox.status = status(v <= 2000)
		var detail []string
		if p99, ok := r.median("BenchmarkSandboxSetup/network=none", "p99-µs"); ok {
			detail = append(detail, "p99 "+duration(p99*1e3))
		}
		if l, ok := r.median("BenchmarkSandboxSetup/loopback+limits", "p50-µs"); ok {
			detail = append(detail, "loopback with ports and limits p50 "+duration(l*1e3))
		}
		sandbox.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, sandbox)

	audit := row{figure: "audit throughput, durable FileSink", target: "≥ 20,000 decisions/s", status: noData}
	if v, ok := r.median("BenchmarkAuditThroughput/file_sink", "decisions/s"); ok {
		audit.measured = fmt.Sprintf("%.0f /s", v)
		audit.status = status(v >= 20000)
		if each, ok := r.median("BenchmarkAuditThroughput/fsync_each", "decisions/s"); ok {
			audit.detail = fmt.Sprintf("fsync per decision: %.0f /s", each)
		}
	}
	rows = append(rows, audit)

	// Issue #26: what the audit costs a call that runs, in CPU, beside the
	// two write(2)s it must make (measured in the same run).
	auditCall := row{figure: "audit path per call (decision and result record, FileSink), CPU", target: "≤ 6 µs", status: noData}
	if v, ok := r.median("BenchmarkAuditCall/file_sink", "cpu-ns/op"); ok {
		auditCall.measured = duration(v)
		auditCall.status = status(v <= 6000)
		if floor, ok := r.median("BenchmarkAuditCall/floor_write", "cpu-ns/op"); ok {
			auditCall.detail = fmt.Sprintf("floor, the two lines as bare write(2)s: %s", duration(floor))
		}
	}
	rows = append(rows, auditCall)

	expr := row{figure: "rule expression (CEL) over the arguments: one decision", target: "p50 ≤ 20 µs", status: noData}
	if v, ok := r.median("BenchmarkPolicyExpr/sql_select", "p50-µs"); ok {
		expr.measured = duration(v * 1e3)
		expr.status = status(v <= 20)
		var detail []string
		if p99, ok := r.median("BenchmarkPolicyExpr/sql_select", "p99-µs"); ok {
			detail = append(detail, "p99 "+duration(p99*1e3))
		}
		if u, ok := r.median("BenchmarkPolicyExpr/url_host", "p50-µs"); ok {
			detail = append(detail, "URL host rule p50 "+duration(u*1e3))
		}
		if n, ok := r.median("BenchmarkPolicyExpr/no_expr", "p50-µs"); ok {
			detail = append(detail, "without an expression p50 "+duration(n*1e3))
		}
		expr.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, expr)

	roundTrip := row{figure: "approval round trip through PostgreSQL (raise → vote on another replica → wake)", target: "p50 ≤ 5 ms", status: noData}
	if v, ok := r.median("BenchmarkApprovalRoundTrip/postgres", "p50-ms"); ok {
		roundTrip.measured = duration(v * 1e6)
		roundTrip.status = status(v <= 5)
		var detail []string
		if p99, ok := r.median("BenchmarkApprovalRoundTrip/postgres", "p99-ms"); ok {
			detail = append(detail, "p99 "+duration(p99*1e6))
		}
		if m, ok := r.median("BenchmarkApprovalRoundTrip/memory", "p50-ms"); ok {
			detail = append(detail, "in-memory queue p50 "+duration(m*1e6))
		}
		if q, ok := r.median("BenchmarkApprovalRoundTrip/sqlite", "p50-ms"); ok {
			detail = append(detail, "SQLite, vote from another handle, p50 "+duration(q*1e6))
		}
		roundTrip.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, roundTrip)

	dbAppends := row{figure: "audit appends to PostgreSQL, each committed before Write returns", target: "≥ 5,000 records/s", status: noData}
	if v, ok := r.median("BenchmarkAuditAppend/postgres", "records/s"); ok {
		dbAppends.measured = fmt.Sprintf("%.0f /s", v)
		dbAppends.status = status(v >= 5000)
		if q, ok := r.median("BenchmarkAuditAppend/sqlite", "records/s"); ok {
			dbAppends.detail = fmt.Sprintf("SQLite: %.0f /s", q)
		}
	}
	rows = append(rows, dbAppends)

	pgStep := row{figure: "checkpoint overhead per durable call step on PostgreSQL (covered by the flushed send ledger)", target: "p50 ≤ 1 ms", status: noData}
	if v, ok := r.median("BenchmarkCheckpointStep/postgres", "p50-ms"); ok {
		pgStep.measured = duration(v * 1e6)
		pgStep.status = status(v <= 1)
		var detail []string
		if m, ok := r.median("BenchmarkCheckpointStep/postgres_model", "p50-ms"); ok {
			detail = append(detail, "a model step (flushed) p50 "+duration(m*1e6))
		}
		if c, ok := r.median("BenchmarkCheckpointStep/postgres_commit", "p50-ms"); ok {
			detail = append(detail, "a bare committed INSERT p50 "+duration(c*1e6))
		}
		if a, ok := r.median("BenchmarkCheckpointStep/postgres_async", "p50-ms"); ok {
			detail = append(detail, "AsyncCommit p50 "+duration(a*1e6))
		}
		pgStep.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, pgStep)

	liteStep := row{figure: "checkpoint overhead per durable step on SQLite", target: "p50 ≤ 0.3 ms", status: noData}
	if v, ok := r.median("BenchmarkCheckpointStep/sqlite", "p50-ms"); ok {
		liteStep.measured = duration(v * 1e6)
		liteStep.status = status(v <= 0.3)
		var detail []string
		if p99, ok := r.median("BenchmarkCheckpointStep/sqlite", "p99-ms"); ok {
			detail = append(detail, "p99 "+duration(p99*1e6))
		}
		if c, ok := r.median("BenchmarkCheckpointStep/sqlite_commit", "p50-ms"); ok {
			detail = append(detail, "a bare committed INSERT p50 "+duration(c*1e6))
		}
		liteStep.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, liteStep)

	turn := row{figure: "a durable turn's CPU ÷ the same turn in memory (library turn, PostgreSQL)", target: "≤ 1.5×", status: noData}
	mem, okm := r.median("BenchmarkDurableTurn/memory", "cpu-ns/op")
	pg, okp := r.median("BenchmarkDurableTurn/postgres", "cpu-ns/op")
	if okm && okp && mem > 0 {
		turn.measured = fmt.Sprintf("%.1f× (%s against %s)", pg/mem, duration(pg), duration(mem))
		turn.status = status(pg/mem <= 1.5)
		var detail []string
		if f, ok := r.median("BenchmarkDurableTurn/postgres_floor", "cpu-ns/op"); ok {
			x, _ := r.median("BenchmarkDurableTurn/postgres", "xacts/op")
			detail = append(detail, fmt.Sprintf("floor: the turn's %.0f transactions as bare commits %s (%.1f× memory)", x, duration(f), f/mem))
		}
		if q, ok := r.median("BenchmarkDurableTurn/sqlite", "cpu-ns/op"); ok {
			detail = append(detail, fmt.Sprintf("SQLite %.1f×", q/mem))
		}
		turn.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, turn)

	served := row{figure: "serve's own CPU per turn, the client in another process: (library + floor server) ÷ serve", target: "≥ 0.85 (serve's own ≤ 40 µs a turn)", status: noData}
	if v, ok := r.median("BenchmarkServeProcess", "(library+floor)/serve"); ok {
		served.measured = fmt.Sprintf("%.2f", v)
		served.status = status(v >= 0.85)
		var detail []string
		for _, m := range []struct{ unit, name string }{{"serve-own-µs/turn", "serve's own"}, {"serve-cpu-µs/turn", "serve"}, {"library-cpu-µs/turn", "library"}, {"floor-cpu-µs/turn", "floor server"}} {
			if x, ok := r.median("BenchmarkServeProcess", m.unit); ok {
				detail = append(detail, fmt.Sprintf("%s %.0f µs", m.name, x))
			}
		}
		served.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, served)

	servedDurable := row{figure: "a served turn's CPU, durable on PostgreSQL ÷ in memory (the serve process alone)", target: "≤ 1.5×", status: noData}
	if v, ok := r.median("BenchmarkServeDurable", "postgres/memory"); ok {
		servedDurable.measured = fmt.Sprintf("%.1f×", v)
		servedDurable.status = status(v <= 1.5)
		var detail []string
		for _, m := range []struct{ unit, name string }{{"postgres-cpu-µs/turn", "PostgreSQL"}, {"memory-cpu-µs/turn", "memory"}, {"sqlite-cpu-µs/turn", "SQLite"}} {
			if x, ok := r.median("BenchmarkServeDurable", m.unit); ok {
				detail = append(detail, fmt.Sprintf("%s %.0f µs", m.name, x))
			}
		}
		if x, ok := r.median("BenchmarkServeDurable", "sqlite/memory"); ok {
			detail = append(detail, fmt.Sprintf("SQLite ÷ memory %.1f×", x))
		}
		if x, ok := r.median("BenchmarkServeDurable", "postgres-xacts/turn"); ok {
			detail = append(detail, fmt.Sprintf("%.0f PostgreSQL transactions a turn", x))
		}
		if x, ok := r.median("BenchmarkServeDurable", "floor/memory"); ok {
			detail = append(detail, fmt.Sprintf("floor (memory + the turn's minimal write set as four bare commits) ÷ memory %.1f×", x))
		}
		if x, ok := r.median("BenchmarkServeDurable", "floor2/memory"); ok {
			detail = append(detail, fmt.Sprintf("the same rows as two bare commits ÷ memory %.2f×", x))
		}
		if x, ok := r.median("BenchmarkServeDurable", "roundtrip-cpu-µs/turn"); ok {
			detail = append(detail, fmt.Sprintf("a bare round trip %.0f µs", x))
		}
		if x, ok := r.median("BenchmarkServeDurable", "total-roundtrips/turn"); ok {
			trips := fmt.Sprintf("%.0f round trips a turn", x)
			var by []string
			for _, owner := range []string{"engine", "adapter", "serve"} {
				if y, ok := r.median("BenchmarkServeDurable", owner+"-roundtrips/turn"); ok {
					by = append(by, fmt.Sprintf("%s %.0f", owner, y))
				}
			}
			if len(by) > 0 {
				trips += " (" + strings.Join(by, ", ") + ")"
			}
			detail = append(detail, trips)
		}
		servedDurable.detail = strings.Join(detail, ", ")
	}
	rows = append(rows, servedDurable)

	for _, db := range []string{"sqlite", "postgres"} {
		restart := row{figure: "1,000 sessions resumable after a restart (" + db + ")", target: "≤ 5 s", status: noData}
		if v, ok := r.median("BenchmarkDurableRestart/"+db, "s/restart"); ok {
			restart.measured = duration(v * 1e9)
			restart.status = status(v <= 5)
			if l, ok := r.median("BenchmarkDurableRestart/"+db, "list-s"); ok {
				restart.detail = "of which listing each session's turns " + duration(l*1e9)
			}
		}
		rows = append(rows, restart)
	}
	return rows
}

// writeFigures prints the figures as a Markdown table.
func writeFigures(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| figure | measured | target | result | details |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, x := range rows {
		measured := x.measured
		if measured == "" {
			measured = "—"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", x.figure, measured, x.target, x.status, x.detail)
	}
}

// writeMedians prints every benchmark's medians as a Markdown table.
func writeMedians(w io.Writer, r results) {
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Fprintln(w, "| benchmark | runs | time/op | B/op | allocs/op | other |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, name := range names {
		nsop, _ := r.median(name, "ns/op")
		var other []string
		units := map[string]bool{}
		for _, s := range r[name] {
			for unit := range s {
				units[unit] = true
			}
		}
		for _, unit := range sortedKeys(units) {
			switch unit {
			case "ns/op", "B/op", "allocs/op":
				continue
			}
			v, _ := r.median(name, unit)
			other = append(other, fmt.Sprintf("%s %s", number(v), unit))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", strings.TrimPrefix(name, "Benchmark"), len(r[name]),
			duration(nsop), medianOr(r, name, "B/op", bytesSize), medianOr(r, name, "allocs/op", number), strings.Join(other, ", "))
	}
}

func medianOr(r results, name, unit string, format func(float64) string) string {
	v, ok := r.median(name, unit)
	if !ok {
		return "—"
	}
	return format(v)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// duration formats nanoseconds with three significant digits.
func duration(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%.0f ns", ns)
	case d < time.Millisecond:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	default:
		return fmt.Sprintf("%.3g s", ns/1e9)
	}
}

func bytesSize(b float64) string {
	switch {
	case b < 1024:
		return fmt.Sprintf("%.0f B", b)
	case b < 1024*1024:
		return fmt.Sprintf("%.1f KiB", b/1024)
	default:
		return fmt.Sprintf("%.1f MiB", b/(1024*1024))
	}
}

func number(v float64) string {
	if v >= 1000 || v == float64(int64(v)) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
