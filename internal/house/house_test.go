package house_test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/agenthost/agenthost"

// topLevel are the folders of the design's top level that may hold Go
// code (docs/ and build files sit beside them).
var topLevel = map[string]bool{
	"cmd": true, "host": true, "llmview": true, "bindings": true, "approvals": true,
	"plugins": true, "config": true, "e2e": true, "internal": true,
}

// rooms ranks the module's rooms: a package may import its own room, or a
// room of lower rank. The longest matching prefix names a package's room;
// each internal/<name> is a room of its own (a leaf).
var rooms = []struct {
	prefix string
	rank   int
}{
	{"cmd", 100}, {"e2e", 100}, {"internal/bench", 100},
	// The composition root: builds a host from a config with the parts
	// host is given (model, stores, plugins, OAuth, telemetry); and the
	// demo command's own package (its SQL engine is no library's), which
	// builds its host with it.
	{"internal/demo", 80}, {"host/compose", 70},
	// The CLI's terminal: line reader and the prompt approver.
	{"cmd/agenthost/internal/terminal", 90},
	// The CLI's own packages: the commands above what they share.
	{"cmd/agenthost/internal/cmd", 99},
	{"cmd/agenthost/internal/cmdutil", 95},
	// The CLI's executables beside the running one (the full build, the
	// small supervisor), which cmdutil and the hand-over both find.
	{"cmd/agenthost/internal/sibling", 94},
	// The full build's parts (docs/cli.md, "Two binaries"): the saved
	// sessions, then the libraries the lean build leaves out, then the
	// commands' test kit, which gives them to every command's tests.
	{"cmd/agenthost/internal/savedsessions", 96},
	{"cmd/agenthost/internal/fulllibs", 97},
	{"cmd/agenthost/internal/cmdutil/cmdtest", 98},
	// Built on host: they import it, host never imports them.
	{"host/serve", 60}, {"host/otelobs", 60}, {"host/durable", 60},
	{"host/historytest", 60}, {"host/ccstream", 60},
	// serve's own parts (event log, SSE, shared store, webhooks, callers'
	// authentication, the listener's bounds): below serve, so none
	// imports it.
	{"host/serve/internal", 55},
	{"host", 50},
	// The session views and the catalog report, over the leaves below.
	{"host/internal/views", 49},
	// What a turn is told of an approval, over host/event.
	{"host/internal/asks", 48},
	// The observation of a call's tools/call attempts, over host/observe.
	{"host/internal/attempts", 48},
	// The answer to a task's question, over asks.
	{"host/internal/taskq", 49},
	// host's own leaves: the pipeline's stages call them; they import
	// mcpconn (host/internal), never host.
	{"host/internal/taint", 48}, {"host/internal/progress", 48}, {"host/internal/mask", 48},
	{"host/internal/secureargs", 47}, {"host/internal/pinstate", 47}, {"host/internal/verdicts", 47},
	{"host/internal/hosterr", 46}, {"host/internal/argschema", 46}, {"host/internal/results", 46},
	{"host/internal/permhook", 46}, {"host/internal/auditsink", 47},
	// The turn's pure parts: the loop's (conversation, messages, limits,
	// call batching) below the durable turn's (seam types, checkpoints,
	// send ledger rules, attachments).
	{"host/internal/turn", 48}, {"host/internal/durableturn", 49},
	// The events of a turn and the telemetry hooks: embedders use them
	// (as host.Event, host.Observer, ...).
	{"host/event", 47}, {"host/observe", 47},
	{"host/internal", 45},
	// mcpconn's parts, below it: the transports on the checks and bounds
	// they share.
	{"host/internal/mcpconn/internal/stdiorpc", 44}, {"host/internal/mcpconn/internal/httpguard", 44},
	{"host/internal/mcpconn/internal/taskwire", 44}, {"host/internal/mcpconn/internal/outbound", 44},
	{"host/internal/mcpconn/internal/errtidy", 44},
	{"host/internal/mcpconn/internal/wirecheck", 43}, {"host/internal/mcpconn/internal/serverreq", 43},
	{"host/mcptest", 42},
	// mcptest's leaves: a task's state above the tools file, which with
	// the test client and the in-process transport stands on the JSON-RPC
	// framing; the recording.
	{"host/mcptest/internal/task", 41},
	{"host/mcptest/internal/toolset", 40}, {"host/mcptest/internal/client", 40},
	{"host/mcptest/internal/inprocess", 40},
	{"host/mcptest/internal/wire", 39}, {"host/mcptest/internal/record", 39},
	// oauth's own parts (JOSE, WWW-Authenticate, discovery URLs, token
	// request wire): below oauth, so none imports it.
	{"host/oauth/internal", 38},
	{"host/oauth", 40}, {"host/model", 40}, {"host/pins", 40}, {"host/secureparams", 40}, {"host/modeltest", 40},
	// secureparams' leaves: the single token pass over a definition, on the
	// JSON helpers of valid definitions; the call-time guard; the compiled
	// secure schema; the bound on a schema's validation cost.
	{"host/secureparams/internal/onepass", 38}, {"host/secureparams/internal/schemajson", 36},
	{"host/secureparams/internal/guard", 36}, {"host/secureparams/internal/valueschema", 38},
	{"host/secureparams/internal/expansion", 39},
	{"config", 30},
	// config's leaves: the file editor and the local settings file above
	// the document reader, the allowlist matcher and the ${VAR} syntax,
	// all above how a problem is reported.
	{"config/internal/serveredit", 29}, {"config/internal/localfile", 29},
	{"config/internal/document", 28}, {"config/internal/allowlist", 28},
	{"config/internal/expand", 27}, {"config/internal/problem", 27},
	{"approvals/stores", 26},
	{"approvals/pgstore", 24}, {"approvals/sqlitestore", 24},
	{"approvals/internal", 22}, {"approvals/storetest", 22},
	// approvals: the audit log records the gate's results; the gate stands
	// on rules, rules on the risk model, all on norm's helpers.
	{"approvals/auditlog", 21},
	{"approvals", 20}, {"approvals/hooks", 21},
	{"approvals/policyinit", 18},
	{"approvals/internal/approvaltest", 17},
	{"approvals/rules", 16},
	{"approvals/internal/risktest", 15},
	{"approvals/risk", 14},
	{"approvals/internal/norm", 12},
	// writediff: a write's proposed change, as its approver sees it
	// (leaves only).
	{"approvals/writediff", 12},
	{"plugins", 20},
	{"llmview", 10}, {"bindings", 10},
	{"internal", 0},
}

// roomOf returns the room of a module-relative package path and its rank.
func roomOf(pkg string) (string, int, bool) {
	best, rank, found := "", 0, false
	for _, r := range rooms {
		if (pkg == r.prefix || strings.HasPrefix(pkg, r.prefix+"/")) && len(r.prefix) > len(best) {
			best, rank, found = r.prefix, r.rank, true
		}
	}
	if best == "internal" { // internal/<name>: a leaf room of its own
		parts := strings.SplitN(pkg, "/", 3)
		if len(parts) >= 2 {
			best = parts[0] + "/" + parts[1]
		}
	}
	return best, rank, found
}

type listed struct {
	ImportPath string
	Imports    []string
}

func modulePackages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	return pkgs
}

// TestTopLevelFolders fails when a folder outside the design's top level
// holds Go code.
func TestTopLevelFolders(t *testing.T) {
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || topLevel[e.Name()] {
			continue
		}
		var goFile string
		_ = filepath.WalkDir(filepath.Join("../..", e.Name()), func(path string, d os.DirEntry, err error) error {
			if err != nil || goFile != "" {
				return filepath.SkipDir
			}
			if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
				goFile = path
			}
			return nil
		})
		if goFile != "" {
			t.Errorf("top-level folder %s/ holds Go code (%s): the design's top level is %v; move it under the room it belongs to", e.Name(), goFile, keys(topLevel))
		}
	}
}

// TestImportsGoDown fails when a package imports a room above its own, or
// when a package has no room in the table. Tests may reach up (an
// approvals test may load a config); what a package links may not.
func TestImportsGoDown(t *testing.T) {
	for _, p := range modulePackages(t) {
		from := strings.TrimPrefix(p.ImportPath, module+"/")
		fromRoom, fromRank, ok := roomOf(from)
		if !ok {
			t.Errorf("package %s has no room in the layers table", from)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			toRoom, toRank, ok := roomOf(to)
			if !ok || toRoom == fromRoom || strings.HasPrefix(to, fromRoom+"/") {
				continue
			}
			if toRank >= fromRank {
				t.Errorf("%s (%s, rank %d) imports %s (%s, rank %d): imports go down the layers", from, fromRoom, fromRank, to, toRoom, toRank)
			}
		}
	}
}

// TestRoomOf pins the table's reading, so a typo in it cannot make every
// import pass.
func TestRoomOf(t *testing.T) {
	tests := []struct {
		pkg  string
		room string
		rank int
	}{
		{"host", "host", 50},
		{"host/serve", "host/serve", 60},
		{"host/serve/internal/eventlog", "host/serve/internal", 55},
		{"host/oauth/internal/jose", "host/oauth/internal", 38},
		{"host/internal/mcpconn", "host/internal", 45},
		{"host/internal/mcpconn/internal/stdiorpc", "host/internal/mcpconn/internal/stdiorpc", 44},
		{"host/internal/mcpconn/internal/wirecheck", "host/internal/mcpconn/internal/wirecheck", 43},
		{"internal/childproc/supervisor", "internal/childproc", 0},
		{"approvals/hooks", "approvals/hooks", 21},
		{"approvals/risk", "approvals/risk", 14},
		{"approvals/internal/norm", "approvals/internal/norm", 12},
		{"approvals/internal/sqlstore", "approvals/internal", 22},
		{"cmd/agenthost", "cmd", 100},
		{"cmd/agenthost/internal/cmd/call", "cmd/agenthost/internal/cmd", 99},
		{"cmd/agenthost/internal/cmdutil", "cmd/agenthost/internal/cmdutil", 95},
	}
	for _, tt := range tests {
		room, rank, ok := roomOf(tt.pkg)
		if !ok || room != tt.room || rank != tt.rank {
			t.Errorf("roomOf(%q) = %q, %d, %v; want %q, %d", tt.pkg, room, rank, ok, tt.room, tt.rank)
		}
	}
	if _, _, ok := roomOf("serve"); ok {
		t.Error("a top-level serve/ has a room: the table admits a folder the design does not")
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
