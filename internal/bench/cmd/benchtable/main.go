// Command benchtable runs agenthost's benchmark suite (package bench) and
// prints the performance table of docs/PERFORMANCE.md: every figure with
// its target and PASS or FAIL, then the median of every benchmark.
//
// It builds the test binary and the executables the benchmarks start
// (agenthost, agenthost-testserver, agenthost-cred-file) once, then runs each
// group of benchmarks for several rounds. Benchmarks that form a ratio run
// in separate processes, interleaved, their order reversed every other
// round, so both sides of a ratio see the same machine conditions; the
// table reports medians over the rounds and the ratio of the medians.
//
// The table is a report: benchtable exits 0 whether targets are met or
// not, and 1 only when the suite cannot be built or run at all.
//
//	go run ./internal/bench/cmd/benchtable [-rounds 5] [-only REGEXP] [-profile DIR] [-raw FILE]
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	modulePath = "github.com/agenthost/agenthost"
	benchPkg   = modulePath + "/internal/bench"
	// binDirEnv must match bench.BinDirEnv.
	binDirEnv = "AGENTHOST_BENCH_BIN"
)

var executables = []string{
	modulePath + "/cmd/agenthost",
	modulePath + "/cmd/agenthost/agenthost-full",
	modulePath + "/cmd/agenthost/agenthost-supervise",
	modulePath + "/cmd/agenthost-testserver",
	modulePath + "/plugins/cmd/agenthost-cred-file",
	modulePath + "/internal/bench/cmd/treerusage",
	modulePath + "/internal/bench/cmd/wholerunfloor",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	rounds  int
	only    *regexp.Regexp
	profile string
	raw     string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", 7, "rounds of the paired (ratio) benchmarks; other groups run min(3, rounds)")
	only := fs.String("only", "", "run only the groups whose name matches this regexp (call-inprocess, call-stdio, call-http, catalog, sessions, concurrency, credentials, startup, whole-run, version-init, sandbox, audit, audit-call, policy, approvals-store, audit-db, checkpoint, durable-turn, serve-process, serve-durable, restart)")
	profile := fs.String("profile", "", "write CPU and memory profiles of every benchmark to this directory (an extra, uncounted round)")
	raw := fs.String("raw", "", "also write the raw benchmark output to this file")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *rounds < 1 {
		return options{}, errors.New("-rounds must be at least 1")
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		return options{}, fmt.Errorf("-only: %w", err)
	}
	o := options{rounds: *rounds, only: re, raw: *raw}
	if *profile != "" {
		if o.profile, err = filepath.Abs(*profile); err != nil {
			return options{}, fmt.Errorf("-profile: %w", err)
		}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "benchtable:", err)
		return 2
	}
	work, err := os.MkdirTemp("", "agenthost-benchtable-")
	if err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 1
	}
	defer os.RemoveAll(work)
	if opts.profile != "" {
		if err := os.MkdirAll(opts.profile, 0o755); err != nil {
			fmt.Fprintln(stderr, "benchtable:", err)
			return 1
		}
	}
	rawOut := io.Discard
	if opts.raw != "" {
		f, err := os.Create(opts.raw)
		if err != nil {
			fmt.Fprintln(stderr, "benchtable:", err)
			return 1
		}
		defer f.Close()
		rawOut = f
	}

	fmt.Fprintln(stderr, "building the benchmark binary and the executables it starts...")
	testBin := filepath.Join(work, "bench.test")
	if err := goCommand(ctx, "test", "-c", "-o", testBin, benchPkg); err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 1
	}
	if err := goCommand(ctx, append([]string{"build", "-o", work + string(filepath.Separator)}, executables...)...); err != nil {
		fmt.Fprintln(stderr, "benchtable:", err)
		return 1
	}

	r := &runner{ctx: ctx, testBin: testBin, binDir: work, results: results{}, log: stderr, raw: rawOut, profile: opts.profile}
	began := time.Now()
	for _, g := range groups {
		if !opts.only.MatchString(g.name) {
			continue
		}
		r.runGroup(g, g.roundsFor(opts.rounds))
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "benchtable: interrupted")
			return 1
		}
	}
	if opts.only.MatchString("catalog") {
		r.checks["others untouched"] = r.runTest("^TestRefreshOneServerLeavesOthersUntouched$")
	}

	fmt.Fprintf(stdout, "agenthost benchmarks — %s, %s/%s, %d CPUs, %d rounds, %s total\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), opts.rounds, time.Since(began).Round(time.Second))
	rows := evaluate(r.results, r.checks)
	if opts.only.String() != "" {
		// A partial run: leave out the figures of the groups not run.
		rows = slices.DeleteFunc(rows, func(x row) bool { return x.status == noData })
	}
	writeFigures(stdout, rows)
	fmt.Fprintln(stdout)
	writeMedians(stdout, r.results)
	return 0
}

func goCommand(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.Bytes())
	}
	return nil
}

// --- groups ----------------------------------------------------------------

// group is a set of benchmarks run together. Separate groups start one
// process per benchmark, interleaved; the others run all their benchmarks
// in one process per round (their setup is costly and they form no ratio).
type group struct {
	name      string
	benches   []string // full names: BenchmarkX/sub
	separate  bool
	benchtime string
	paired    bool // rounds = the -rounds flag; otherwise min(3, rounds)
}

func (g group) roundsFor(flagRounds int) int {
	if g.paired {
		return flagRounds
	}
	return min(3, flagRounds)
}

var groups = []group{
	{name: "call-inprocess", separate: true, paired: true, benchtime: "3s", benches: []string{
		"BenchmarkCallInProcess/interleaved", "BenchmarkCallInProcess/interleaved_floor", "BenchmarkCallInProcess/bare", "BenchmarkCallInProcess/host", "BenchmarkCallInProcess/host_plain", "BenchmarkCallInProcess/bare_plain"}},
	{name: "call-stdio", separate: true, paired: true, benchtime: "3s", benches: []string{
		"BenchmarkCallStdio/interleaved", "BenchmarkCallStdio/interleaved_floor", "BenchmarkCallStdio/bare", "BenchmarkCallStdio/host", "BenchmarkCallStdio/host_plain", "BenchmarkCallStdio/bare_plain"}},
	{name: "call-http", separate: true, paired: true, benchtime: "2s", benches: []string{
		"BenchmarkCallHTTP/interleaved", "BenchmarkCallHTTP/interleaved_floor", "BenchmarkCallHTTP/bare", "BenchmarkCallHTTP/host", "BenchmarkCallHTTP/host_plain", "BenchmarkCallHTTP/bare_plain"}},
	{name: "catalog", benchtime: "500ms", benches: []string{
		"BenchmarkCatalog/build_cold", "BenchmarkCatalog/rebuild", "BenchmarkCatalog/bare_list_all", "BenchmarkCatalog/view_cold",
		"BenchmarkCatalog/view_after_refresh_one", "BenchmarkCatalog/refresh_one_and_view",
		"BenchmarkCatalog/floor_json_valid", "BenchmarkCatalog/floor_json_decode"}},
	{name: "sessions", benchtime: "1x", benches: []string{
		"BenchmarkIdleSessions/opened", "BenchmarkIdleSessions/after_one_call"}},
	{name: "concurrency", separate: true, benchtime: "1s", benches: []string{
		"BenchmarkConcurrency/sessions=10", "BenchmarkConcurrency/sessions=1000"}},
	{name: "credentials", benchtime: "1s", benches: []string{
		"BenchmarkCredentialResolve/cached", "BenchmarkCredentialResolve/plugin_round_trip",
		"BenchmarkCredentialResolve/concurrent_misses"}},
	{name: "startup", separate: true, paired: true, benchtime: "1x", benches: []string{
		"BenchmarkStartup/servers=1", "BenchmarkStartup/servers=10"}},
	{name: "whole-run", separate: true, benchtime: "10x", benches: []string{"BenchmarkWholeRun"}},
	{name: "version-init", separate: true, benchtime: "10x", benches: []string{"BenchmarkVersionInit"}},
	{name: "sandbox", benchtime: "200x", benches: []string{
		"BenchmarkSandboxSetup/network=none", "BenchmarkSandboxSetup/loopback+limits"}},
	{name: "audit", benchtime: "1s", benches: []string{
		"BenchmarkAuditThroughput/file_sink", "BenchmarkAuditThroughput/fsync_each"}},
	{name: "audit-call", benchtime: "1s", benches: []string{
		"BenchmarkAuditCall/file_sink", "BenchmarkAuditCall/floor_write"}},
	{name: "policy", benchtime: "1s", benches: []string{
		"BenchmarkPolicyExpr/sql_select", "BenchmarkPolicyExpr/url_host", "BenchmarkPolicyExpr/no_expr"}},
	{name: "approvals-store", benchtime: "2s", benches: []string{
		"BenchmarkApprovalRoundTrip/memory", "BenchmarkApprovalRoundTrip/postgres", "BenchmarkApprovalRoundTrip/sqlite"}},
	{name: "audit-db", benchtime: "3s", benches: []string{
		"BenchmarkAuditAppend/postgres", "BenchmarkAuditAppend/sqlite"}},
	{name: "checkpoint", benchtime: "2000x", benches: []string{
		"BenchmarkCheckpointStep/postgres", "BenchmarkCheckpointStep/postgres_model", "BenchmarkCheckpointStep/postgres_async",
		"BenchmarkCheckpointStep/postgres_commit", "BenchmarkCheckpointStep/sqlite", "BenchmarkCheckpointStep/sqlite_commit"}},
	{name: "durable-turn", benchtime: "200x", benches: []string{
		"BenchmarkDurableTurn/memory", "BenchmarkDurableTurn/sqlite", "BenchmarkDurableTurn/postgres", "BenchmarkDurableTurn/postgres_floor"}},
	{name: "serve-process", benchtime: "1x", benches: []string{"BenchmarkServeProcess"}},
	{name: "serve-durable", benchtime: "1x", benches: []string{"BenchmarkServeDurable"}},
	{name: "restart", benchtime: "2x", benches: []string{
		"BenchmarkDurableRestart/sqlite", "BenchmarkDurableRestart/postgres"}},
}

// benchPattern is the -test.bench expression matching exactly these
// benchmarks (one top-level benchmark, any of the given subs).
func benchPattern(benches []string) string {
	var top string
	var subs []string
	for _, b := range benches {
		t, sub, hasSub := strings.Cut(b, "/")
		top = t
		if !hasSub {
			return "^" + regexp.QuoteMeta(top) + "$" // a benchmark without sub-benchmarks
		}
		subs = append(subs, regexp.QuoteMeta(sub))
	}
	return "^" + regexp.QuoteMeta(top) + "$/^(" + strings.Join(subs, "|") + ")$"
}

// --- running ---------------------------------------------------------------

type runner struct {
	ctx     context.Context
	testBin string
	binDir  string
	results results
	checks  map[string]error
	log     io.Writer
	raw     io.Writer
	profile string
}

func (r *runner) runGroup(g group, rounds int) {
	if r.checks == nil {
		r.checks = map[string]error{}
	}
	if r.profile != "" {
		for _, set := range invocations(g, 0) {
			fmt.Fprintf(r.log, "%s: profiling %s\n", g.name, strings.Join(set, ", "))
			name := g.name
			if g.separate {
				_, sub, _ := strings.Cut(set[0], "/")
				name += "_" + strings.NewReplacer("=", "", "/", "_").Replace(sub)
			}
			r.invoke(g, set, "-test.cpuprofile", filepath.Join(r.profile, name+".cpu.pprof"),
				"-test.memprofile", filepath.Join(r.profile, name+".mem.pprof"))
		}
	}
	for round := range rounds {
		for _, set := range invocations(g, round) {
			fmt.Fprintf(r.log, "%s: round %d/%d: %s\n", g.name, round+1, rounds, strings.Join(set, ", "))
			for name, sample := range r.invoke(g, set) {
				r.results[name] = append(r.results[name], sample)
			}
		}
	}
}

// invocations are the benchmark sets run, one process each, in a round:
// separate groups alternate their order every other round.
func invocations(g group, round int) [][]string {
	if !g.separate {
		return [][]string{g.benches}
	}
	order := slices.Clone(g.benches)
	if round%2 == 1 {
		slices.Reverse(order)
	}
	sets := make([][]string, len(order))
	for i, b := range order {
		sets[i] = []string{b}
	}
	return sets
}

func (r *runner) invoke(g group, benches []string, extra ...string) map[string]sample {
	args := append([]string{"-test.run", "^$", "-test.bench", benchPattern(benches), "-test.benchmem",
		"-test.benchtime", g.benchtime, "-test.count", "1", "-test.timeout", "15m"}, extra...)
	out, err := r.testCommand(args)
	got := parseOutput(out)
	if err != nil || len(got) < len(benches) {
		fmt.Fprintf(r.log, "  %s failed (%v):\n%s\n", strings.Join(benches, ", "), err, tail(out, 40))
	}
	return got
}

func (r *runner) runTest(pattern string) error {
	out, err := r.testCommand([]string{"-test.run", pattern, "-test.bench", "^$", "-test.count", "1", "-test.v"})
	if err != nil {
		fmt.Fprintf(r.log, "  test %s failed:\n%s\n", pattern, tail(out, 40))
		return fmt.Errorf("%s failed: %w", pattern, err)
	}
	return nil
}

func (r *runner) testCommand(args []string) ([]byte, error) {
	cmd := exec.CommandContext(r.ctx, r.testBin, args...)
	cmd.Env = append(os.Environ(), binDirEnv+"="+r.binDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	_, _ = r.raw.Write(out.Bytes())
	return out.Bytes(), err
}

func tail(out []byte, lines int) string {
	all := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return "    " + strings.Join(all[max(0, len(all)-lines):], "\n    ")
}

// --- parsing ---------------------------------------------------------------

// sample is one benchmark result line: value by unit (ns/op, B/op,
// allocs/op and custom metrics).
type sample map[string]float64

// results are every sample of every benchmark, by name without the
// -GOMAXPROCS suffix.
type results map[string][]sample

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.+)$`)

// parseOutput reads the result lines of `go test -bench` output.
func parseOutput(out []byte) map[string]sample {
	got := map[string]sample{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, s, ok := parseLine(sc.Text())
		if ok {
			got[name] = s
		}
	}
	return got
}

func parseLine(line string) (string, sample, bool) {
	m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return "", nil, false
	}
	fields := strings.Fields(m[3])
	if len(fields)%2 != 0 {
		return "", nil, false
	}
	s := sample{}
	for i := 0; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return "", nil, false
		}
		s[fields[i+1]] = v
	}
	if _, ok := s["ns/op"]; !ok {
		return "", nil, false
	}
	return m[1], s, true
}

// median is the median of a benchmark's unit over its samples; ok is false
// when there is none.
func (r results) median(name, unit string) (float64, bool) {
	var vs []float64
	for _, s := range r[name] {
		if v, ok := s[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}
