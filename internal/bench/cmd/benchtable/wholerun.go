package main

import (
	"fmt"
	"strings"
)

// The whole-run targets of issue #26 (BenchmarkWholeRun).
const (
	wholeRunRatio     = 1.0 // host ÷ floor, wall and CPU
	wholeRunPeakMiB   = 25.0
	versionPeakMiB    = 15.0
	toolsOneServerMs  = 30.0
	perServerCPUMs    = 15.0
	supervisorCPUMs   = 2.0 // the long-lived child supervisor's start
	wholeRunBenchmark = "BenchmarkWholeRun"
)

// wholeRunRows are the figures of BenchmarkWholeRun: the 3-step one-shot
// run against its floor (which stands in for commit fb71548, where issue
// #26 measured it) and, when their binaries were given, kit and a baseline
// agenthost; its peak RSS; `agenthost version`'s peak RSS with the package
// inits BenchmarkVersionInit counts; `agenthost tools` with one fast
// server; the CPU of each additional stdio server.
func wholeRunRows(r results) []row {
	m := func(unit string) (float64, bool) { return r.median(wholeRunBenchmark, unit) }
	ms := func(v float64) string { return duration(v * 1e6) }

	run := row{figure: "3-step one-shot `agenthost run`, fast stdio server: host ÷ fb71548 (without a baseline binary, ÷ the floor, which stands in for it)",
		target: fmt.Sprintf("≤ %.1f wall and CPU", wholeRunRatio), status: noData}
	against := "baseline"
	wall, ok1 := m("host/baseline-wall")
	cpu, ok2 := m("host/baseline-cpu")
	if !ok1 || !ok2 {
		against = "floor"
		wall, ok1 = m("host/floor-wall")
		cpu, ok2 = m("host/floor-cpu")
	}
	if ok1 && ok2 {
		run.measured = fmt.Sprintf("÷ %s: wall %.2f, CPU %.2f", against, wall, cpu)
		run.status = status(wall <= wholeRunRatio && cpu <= wholeRunRatio)
		var detail []string
		for _, c := range []string{"host", "floor", "baseline", "kit"} {
			w, okW := m(c + "-wall-ms")
			u, okU := m(c + "-cpu-ms")
			if okW && okU {
				detail = append(detail, fmt.Sprintf("%s %s wall, %s CPU", c, ms(w), ms(u)))
			}
		}
		if against == "baseline" {
			if fw, ok := m("host/floor-wall"); ok {
				fc, _ := m("host/floor-cpu")
				detail = append(detail, fmt.Sprintf("÷ floor: wall %.2f, CPU %.2f", fw, fc))
			}
		}
		run.detail = strings.Join(detail, "; ")
	}

	peak := row{figure: "peak RSS of that run (the largest process)", target: fmt.Sprintf("≤ %.0f MiB", wholeRunPeakMiB), status: noData}
	if v, ok := m("host-peak-MiB"); ok {
		peak.measured = fmt.Sprintf("%.1f MiB", v)
		peak.status = status(v <= wholeRunPeakMiB)
		var detail []string
		for _, c := range []string{"floor", "baseline", "kit"} {
			if p, ok := m(c + "-peak-MiB"); ok {
				detail = append(detail, fmt.Sprintf("%s %.1f MiB", c, p))
			}
		}
		peak.detail = strings.Join(detail, ", ")
	}

	tools := row{figure: "`agenthost tools`, one fast stdio server", target: fmt.Sprintf("≤ %.0f ms", toolsOneServerMs), status: noData}
	if v, ok := m("tools-wall-ms"); ok {
		tools.measured = ms(v)
		tools.status = status(v <= toolsOneServerMs)
		if c, ok := m("tools-cpu-ms"); ok {
			tools.detail = "CPU " + ms(c)
		}
		if p, ok := m("tools-peak-MiB"); ok {
			tools.detail += fmt.Sprintf(", peak RSS %.1f MiB", p)
		}
	}

	// msRow is a figure of one metric in milliseconds against its limit,
	// with a second metric, when measured, in its detail.
	msRow := func(figure, metric string, limit float64, detailMetric, detail string) row {
		rw := row{figure: figure, target: fmt.Sprintf("≤ %.0f ms", limit), status: noData}
		if v, ok := m(metric); ok {
			rw.measured = ms(v)
			rw.status = status(v <= limit)
			if d, ok := m(detailMetric); ok {
				rw.detail = fmt.Sprintf(detail, ms(d))
			}
		}
		return rw
	}
	per := msRow("CPU per additional stdio server (`tools`, ten fast servers against one, every process)",
		"per-server-cpu-ms", perServerCPUMs, "per-server-host-cpu-ms", "of it the agenthost process's own %s; the rest the server and the supervisor")
	version := row{figure: "`agenthost version` peak RSS", target: fmt.Sprintf("≤ %.0f MiB", versionPeakMiB), status: noData}
	if v, ok := m("version-peak-MiB"); ok {
		version.measured = fmt.Sprintf("%.1f MiB", v)
		version.status = status(v <= versionPeakMiB)
		if n, ok := r.median("BenchmarkVersionInit", "inits"); ok {
			by, _ := r.median("BenchmarkVersionInit", "init-B")
			al, _ := r.median("BenchmarkVersionInit", "init-allocs")
			version.detail = fmt.Sprintf("%.0f package inits, %s and %.0f allocations at init (GODEBUG=inittrace=1)", n, bytesSize(by), al)
		}
	}
	sup := msRow("the long-lived child supervisor's start and exit, CPU (one per host for all its stdio servers, `agenthost-supervise`)",
		"supervisor-cpu-ms", supervisorCPUMs, "supervisor-self-cpu-ms", "through the CLI's own binary (none beside it) %s")
	return []row{run, peak, version, tools, per, sup}
}
