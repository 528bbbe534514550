package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host/modeltest"
)

// The whole-run benchmark's optional contenders.
const (
	// KitEnv names a kit binary (github.com/mark3labs/kit, the nearest
	// peer; docs/PERFORMANCE.md says how to build v0.96.1): with it,
	// BenchmarkWholeRun runs the same scenario with kit too.
	KitEnv = "AGENTHOST_BENCH_KIT"
	// BaselineEnv names an agenthost binary built from another commit (such
	// as fb71548, where issue #26 measured the whole run): with it,
	// BenchmarkWholeRun runs the same scenario with that binary too.
	BaselineEnv = "AGENTHOST_BENCH_BASELINE"
)

// wholeRunAnswer is the scripted model's final answer.
const wholeRunAnswer = "Done: one, two."

// wholeRunScript is the 3-step one-shot run: two tool calls on the fast
// echo server, one per step, then a text answer. Each step expects the
// previous call's result in the transcript, so a run that did not call
// the tool fails.
func wholeRunScript() modeltest.Script {
	return modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{{Name: "fast__echo", Arguments: `{"text":"one"}`}}},
		{ToolCalls: []modeltest.ToolCall{{Name: "fast__echo", Arguments: `{"text":"two"}`}},
			Expect: &modeltest.Expect{LastToolResultContains: "one"}},
		{Text: wholeRunAnswer, Expect: &modeltest.Expect{LastToolResultContains: "two"}},
	}
}

// echoToolJSON is the fast server's one tool, declared a low-risk read
// (SEP-2793) by a server the config trusts, and a rule allows reads: no
// call asks anyone, in this commit's config syntax and fb71548's alike.
const echoToolJSON = `[{"name": "echo", "description": "Echo the text back.",
 "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
 "annotations": {"readOnlyHint": true, "category": "read", "riskLevel": "low", "blastRadius": "item",
  "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`

// wholeRun is the whole-run fixture: copies of the binaries, the configs,
// and the scripted model, which plays a fresh script for every run.
type wholeRun struct {
	dir       string
	rusage    string // the treerusage copy
	agenthost string
	floor     string
	server    string
	supervise string // the small supervisor, beside agenthost
	tools     string // the echo server's tools file
	config    string // one fast server, the model, the approvals
	config10  string // ten fast servers
	kitConfig string
	modelURL  string
	others    map[string]string // copies of the binaries BaselineEnv and KitEnv name
	model     atomic.Pointer[modeltest.Server]
}

// copyBinary copies an executable into dir, 64 KiB a write: a process
// started from a file written in large writes (as the linker writes it)
// maps its large page-cache folios whole and peaks well above one started
// from a copy (docs/PERFORMANCE.md, "Init cost": 46 against 31 MiB for
// `agenthost version`).
func copyBinary(dir, path string) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	name := filepath.Join(dir, filepath.Base(path))
	out, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	// The struct wrappers keep io.CopyBuffer from copy_file_range.
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, 64<<10))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return name, err
}

func wholeRunFixture(tb testing.TB) *wholeRun {
	if runtime.GOOS != "linux" {
		tb.Skip("the whole-run figures need a Linux subreaper (treerusage)")
	}
	// The small supervisor is copied beside agenthost, as go install puts
	// it, and supervises the host's stdio server (cmdutil.SupervisorName).
	bins := []string{binary(tb, "treerusage"), binary(tb, "agenthost"), binary(tb, "wholerunfloor"), binary(tb, "agenthost-testserver"), binary(tb, "agenthost-supervise")}
	return sharedFixture(tb, "wholerun", func() (*wholeRun, error) {
		dir, err := tempDir("agenthost-bench-wholerun-")
		if err != nil {
			return nil, err
		}
		w := &wholeRun{dir: dir, others: map[string]string{}}
		copies := []*string{&w.rusage, &w.agenthost, &w.floor, &w.server, &w.supervise}
		for i, bin := range bins {
			if *copies[i], err = copyBinary(dir, bin); err != nil {
				return nil, err
			}
		}
		for _, env := range []string{BaselineEnv, KitEnv} {
			if bin := os.Getenv(env); bin != "" {
				sub := filepath.Join(dir, env)
				if err := os.Mkdir(sub, 0o755); err != nil {
					return nil, err
				}
				if w.others[env], err = copyBinary(sub, bin); err != nil {
					return nil, err
				}
			}
		}
		w.tools = filepath.Join(dir, "tools.json")
		if err := os.WriteFile(w.tools, []byte(echoToolJSON), 0o600); err != nil {
			return nil, err
		}
		ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.model.Load().Handler().ServeHTTP(rw, r)
		}))
		onClose(ts.Close)
		w.modelURL = ts.URL + "/v1"
		w.model.Store(modeltest.New(wholeRunScript()))
		for _, c := range []struct {
			path    *string
			servers int
		}{{&w.config, 1}, {&w.config10, startupServers}} {
			var b strings.Builder
			fmt.Fprintf(&b, "llm:\n  baseURL: %q\n  apiKey: bench\n  model: scripted\nmcpServers:\n", w.modelURL)
			for i := range c.servers {
				name := "fast"
				if i > 0 {
					name = fmt.Sprintf("fast%d", i)
				}
				fmt.Fprintf(&b, "  %s:\n    command: %q\n    args: [\"--tools\", %q]\n    trustAnnotations: true\n", name, w.server, w.tools)
			}
			b.WriteString("approvals:\n  rules:\n    - {id: reads, when: {category: [read]}, decide: allow}\n")
			*c.path = filepath.Join(dir, fmt.Sprintf("servers-%d.yaml", c.servers))
			if err := os.WriteFile(*c.path, []byte(b.String()), 0o600); err != nil {
				return nil, err
			}
		}
		w.kitConfig = filepath.Join(dir, "kit.yml")
		kit := fmt.Sprintf("mcpServers:\n  fast:\n    type: local\n    command: [%q, \"--tools\", %q]\n", w.server, w.tools)
		if err := os.WriteFile(w.kitConfig, []byte(kit), 0o600); err != nil {
			return nil, err
		}
		return w, nil
	})
}

// treeCost is what one run of a process tree cost (treerusage's line).
type treeCost struct {
	wall, cpu, mainCPU float64 // ms
	peakMiB            float64
}

// measure runs argv under treerusage with env added, its stdout kept,
// and returns the tree's cost; the run must exit 0.
func (w *wholeRun) measure(env []string, argv ...string) (treeCost, string, error) {
	out := filepath.Join(w.dir, "rusage.txt")
	_ = os.Remove(out)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(w.rusage, append([]string{out}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = w.dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return treeCost{}, "", fmt.Errorf("%s: %w\n%s%s", filepath.Base(argv[0]), err, stdout.Bytes(), stderr.Bytes())
	}
	line, err := os.ReadFile(out)
	if err != nil {
		return treeCost{}, "", err
	}
	f := strings.Fields(string(line))
	if len(f) != 5 {
		return treeCost{}, "", fmt.Errorf("treerusage wrote %q", line)
	}
	var v [5]float64
	for i := range f {
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return treeCost{}, "", fmt.Errorf("treerusage wrote %q", line)
		}
	}
	if v[4] != 0 {
		return treeCost{}, "", fmt.Errorf("%s exited with status %v\n%s%s", filepath.Base(argv[0]), v[4], stdout.Bytes(), stderr.Bytes())
	}
	return treeCost{wall: v[0] / 1e6, cpu: v[1] / 1e6, mainCPU: v[2] / 1e6, peakMiB: v[3] / 1024}, stdout.String(), nil
}

// oneShot runs one contender of the 3-step run against a fresh script
// and checks that all three model requests were answered without a wire
// failure (and, where the contender prints it, the final answer).
func (w *wholeRun) oneShot(c wholeRunContender) (treeCost, error) {
	srv := modeltest.New(wholeRunScript())
	w.model.Store(srv)
	cost, stdout, err := w.measure(c.env, c.argv...)
	if err != nil {
		return cost, err
	}
	if failures := srv.Failures(); len(failures) > 0 {
		return cost, fmt.Errorf("%s: the model server recorded %q", c.name, failures)
	}
	if n := len(srv.Recorded()); n != 3 {
		return cost, fmt.Errorf("%s: %d model requests, want 3", c.name, n)
	}
	if c.printsAnswer && !strings.Contains(stdout, wholeRunAnswer) {
		return cost, fmt.Errorf("%s printed %q, not the model's answer", c.name, stdout)
	}
	return cost, nil
}

// tools runs `agenthost tools` on config (servers fast servers) and checks
// that every server connected.
func (w *wholeRun) toolsRun(config string, servers int) (treeCost, error) {
	cost, stdout, err := w.measure(nil, w.agenthost, "--config", config, "tools")
	if err != nil {
		return cost, err
	}
	if got := strings.Count(stdout, "(connected"); got != servers {
		return cost, fmt.Errorf("agenthost tools: %d of %d servers connected:\n%s", got, servers, stdout)
	}
	return cost, nil
}

type wholeRunContender struct {
	name         string
	argv         []string
	env          []string
	printsAnswer bool
}

func (w *wholeRun) contenders() []wholeRunContender {
	const prompt = "Echo one, then two."
	cs := []wholeRunContender{
		{name: "host", argv: []string{w.agenthost, "--config", w.config, "run", prompt}, printsAnswer: true},
		{name: "floor", argv: []string{w.floor, "fast", prompt, w.server, "--tools", w.tools}, printsAnswer: true,
			env: []string{"OPENAI_BASE_URL=" + w.modelURL, "OPENAI_API_KEY=bench", "AGENTHOST_LLM_MODEL=scripted"}},
	}
	if bin := w.others[BaselineEnv]; bin != "" {
		cs = append(cs, wholeRunContender{name: "baseline", argv: []string{bin, "--config", w.config, "run", prompt}, printsAnswer: true})
	}
	if bin := w.others[KitEnv]; bin != "" {
		// kit's one-shot mode on an OpenAI-compatible endpoint, with
		// nothing of its own loaded (core tools, extensions, skills,
		// agents, templates, the session file) and a home of its own.
		home := filepath.Join(w.dir, "kit-home")
		cs = append(cs, wholeRunContender{name: "kit", env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home},
			argv: []string{bin, "--config", w.kitConfig, "--model", "openai/scripted", "--provider-url", w.modelURL,
				"--provider-api-key", "bench", "--no-session", "--no-core-tools", "--no-extensions", "--no-skills",
				"--no-agents", "--no-prompt-templates", "--quiet", prompt}})
	}
	return cs
}

// BenchmarkWholeRun is issue #26's whole-run figure: `agenthost run`, one
// shot, three steps against a scripted OpenAI-compatible model (two calls
// of the fast echo stdio server's tool, one a step, then the answer),
// beside the floor (cmd/wholerunfloor: the same requests and calls made
// with go-openai and mcp-go alone) and, when their binaries are given,
// kit (KitEnv) and an agenthost of another commit (BaselineEnv). Each
// iteration runs every contender once, in an order that rotates, plus
// `agenthost version` and `agenthost tools` with one fast server and with
// ten; every process is run under treerusage, which counts the whole tree.
//
// Reported, each the median over the iterations: NAME-wall-ms,
// NAME-cpu-ms (every process of the tree), NAME-peak-MiB (the largest
// process), and the least of the iterations beside the first two
// (NAME-wall-min-ms, NAME-cpu-min-ms: on a shared machine the floor the
// load leaves), host/floor-wall and host/floor-cpu (the ratios of the
// medians; host/baseline-* too with a baseline); version-peak-MiB;
// tools-wall-ms, tools-cpu-ms (and their -min-ms) and tools-peak-MiB for
// one server; per-server-cpu-ms (ten servers less one, over nine) and
// per-server-host-cpu-ms, the agenthost process's own part of it (its
// servers and its supervisor are not its waited children);
// supervisor-cpu-ms, the CPU of the long-lived child supervisor's start
// and exit (agenthost-supervise, one per host for all its stdio servers),
// and supervisor-self-cpu-ms, the same through the CLI's own binary.
func BenchmarkWholeRun(b *testing.B) {
	w := wholeRunFixture(b)
	cs := w.contenders()
	costs := map[string][]treeCost{}
	type step struct {
		name string
		run  func() (treeCost, error)
	}
	var steps []step
	for _, c := range cs {
		steps = append(steps, step{c.name, func() (treeCost, error) { return w.oneShot(c) }})
	}
	steps = append(steps,
		step{"version", func() (treeCost, error) {
			cost, _, err := w.measure(nil, w.agenthost, "version")
			return cost, err
		}},
		step{"tools", func() (treeCost, error) { return w.toolsRun(w.config, 1) }},
		// The long-lived child supervisor's start and exit, with no host
		// on its socket: the small supervisor's and the CLI's own binary's.
		step{"supervise-small", func() (treeCost, error) {
			cost, _, err := w.measure(nil, w.supervise, "__agenthost-supervise", "-serve")
			return cost, err
		}},
		step{"supervise-self", func() (treeCost, error) {
			cost, _, err := w.measure(nil, w.agenthost, "__agenthost-supervise", "-serve")
			return cost, err
		}},
		step{"tools10", func() (treeCost, error) { return w.toolsRun(w.config10, startupServers) }})
	i := 0
	for b.Loop() {
		for j := range steps {
			s := steps[(i+j)%len(steps)]
			cost, err := s.run()
			if err != nil {
				b.Fatal(err)
			}
			costs[s.name] = append(costs[s.name], cost)
		}
		i++
	}
	med := func(name string, f func(treeCost) float64) float64 {
		var vs []float64
		for _, c := range costs[name] {
			vs = append(vs, f(c))
		}
		return median(vs)
	}
	wall := func(c treeCost) float64 { return c.wall }
	cpu := func(c treeCost) float64 { return c.cpu }
	peak := func(c treeCost) float64 { return c.peakMiB }
	mainCPU := func(c treeCost) float64 { return c.mainCPU }
	least := func(name string, f func(treeCost) float64) float64 {
		var vs []float64
		for _, c := range costs[name] {
			vs = append(vs, f(c))
		}
		return slices.Min(vs)
	}
	for _, c := range cs {
		b.ReportMetric(med(c.name, wall), c.name+"-wall-ms")
		b.ReportMetric(med(c.name, cpu), c.name+"-cpu-ms")
		b.ReportMetric(least(c.name, wall), c.name+"-wall-min-ms")
		b.ReportMetric(least(c.name, cpu), c.name+"-cpu-min-ms")
		b.ReportMetric(med(c.name, peak), c.name+"-peak-MiB")
	}
	b.ReportMetric(med("host", wall)/med("floor", wall), "host/floor-wall")
	b.ReportMetric(med("host", cpu)/med("floor", cpu), "host/floor-cpu")
	if len(costs["baseline"]) > 0 {
		b.ReportMetric(med("host", wall)/med("baseline", wall), "host/baseline-wall")
		b.ReportMetric(med("host", cpu)/med("baseline", cpu), "host/baseline-cpu")
	}
	b.ReportMetric(med("version", peak), "version-peak-MiB")
	b.ReportMetric(med("supervise-small", cpu), "supervisor-cpu-ms")
	b.ReportMetric(med("supervise-self", cpu), "supervisor-self-cpu-ms")
	b.ReportMetric(med("tools", wall), "tools-wall-ms")
	b.ReportMetric(med("tools", cpu), "tools-cpu-ms")
	b.ReportMetric(least("tools", wall), "tools-wall-min-ms")
	b.ReportMetric(least("tools", cpu), "tools-cpu-min-ms")
	b.ReportMetric(med("tools", peak), "tools-peak-MiB")
	extra := float64(startupServers - 1)
	b.ReportMetric((med("tools10", cpu)-med("tools", cpu))/extra, "per-server-cpu-ms")
	b.ReportMetric((med("tools10", mainCPU)-med("tools", mainCPU))/extra, "per-server-host-cpu-ms")
}

// median of vs (0 for none).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}
