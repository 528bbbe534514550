package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/internal/childproc"
)

// BinDirEnv names a directory holding prebuilt agenthost, agenthost-testserver,
// agenthost-cred-file, treerusage and wholerunfloor executables (benchtable
// builds them once for all of its runs). Without it the executables are
// built on first use.
const BinDirEnv = "AGENTHOST_BENCH_BIN"

func TestMain(m *testing.M) {
	if url := os.Getenv(serveClientEnv); url != "" {
		os.Exit(runServeClient(url)) // a client process of BenchmarkServeProcess
	}
	code := m.Run()
	closeShared()
	stopPostgres()
	os.Exit(code)
}

// --- executables -----------------------------------------------------------

var executables = map[string]string{
	"agenthost":            "github.com/agenthost/agenthost/cmd/agenthost",
	"agenthost-full":       "github.com/agenthost/agenthost/cmd/agenthost/agenthost-full",
	"agenthost-supervise":  "github.com/agenthost/agenthost/cmd/agenthost/agenthost-supervise",
	"agenthost-testserver": "github.com/agenthost/agenthost/cmd/agenthost-testserver",
	"agenthost-cred-file":  "github.com/agenthost/agenthost/plugins/cmd/agenthost-cred-file",
	"treerusage":           "github.com/agenthost/agenthost/internal/bench/cmd/treerusage",
	"wholerunfloor":        "github.com/agenthost/agenthost/internal/bench/cmd/wholerunfloor",
}

var built struct {
	once sync.Once
	dir  string
	err  error
}

// binary returns the path of one of the executables.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	if _, ok := executables[name]; !ok {
		tb.Fatalf("unknown executable %q", name)
	}
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return filepath.Join(dir, name)
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "agenthost-bench-bin-")
		if err != nil {
			built.err = err
			return
		}
		onClose(func() { _ = os.RemoveAll(dir) })
		args := []string{"build", "-o", dir + string(filepath.Separator)}
		for _, pkg := range executables {
			args = append(args, pkg)
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		built.dir = dir
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return filepath.Join(built.dir, name)
}

// --- shared fixtures -------------------------------------------------------

// The testing package calls a benchmark function several times while it
// sizes b.N; expensive fixtures (a hundred servers, a thousand warm
// sessions) are built once per process and closed after m.Run.
var shared struct {
	mu      sync.Mutex
	values  map[string]any
	closers []func()
}

func onClose(f func()) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.closers = append(shared.closers, f)
}

func closeShared() {
	shared.mu.Lock()
	closers := shared.closers
	shared.closers, shared.values = nil, nil
	shared.mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

// sharedFixture builds the fixture under key once; build registers its own
// cleanup with onClose.
func sharedFixture[T any](tb testing.TB, key string, build func() (T, error)) T {
	tb.Helper()
	shared.mu.Lock()
	if v, ok := shared.values[key]; ok {
		shared.mu.Unlock()
		return v.(T)
	}
	shared.mu.Unlock()
	v, err := build()
	if err != nil {
		tb.Fatalf("fixture %s: %v", key, err)
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.values == nil {
		shared.values = map[string]any{}
	}
	shared.values[key] = v
	return v
}

func tempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	onClose(func() { _ = os.RemoveAll(dir) })
	return dir, nil
}

// --- tools -----------------------------------------------------------------

// The per-call tool. Its secure parameters are optional so that a bare
// mcp-go client, which cannot send secureArguments, can call the very same
// tool; the host fills all three (a cached source, a literal, a session
// value) and sends region as the Mcp-Param-Region header too.
const lookupOrderTool = `{"name": "lookup_order", "title": "Look up an order",
 "description": "Look up one order of the current tenant by id and return the requested fields.",
 "inputSchema": {"type": "object", "properties": {
   "order_id": {"type": "string", "description": "Order id, e.g. A-1042."},
   "fields": {"type": "array", "items": {"type": "string", "enum": ["status", "total", "items", "customer"]}}},
  "required": ["order_id"], "additionalProperties": false},
 "secureInputSchema": {"type": "object", "properties": {
   "tenant_id": {"type": "string", "minLength": 1},
   "region": {"type": "string", "enum": ["eu-west1", "us-east1", "us-west1"], "x-mcp-header": "Region"},
   "instance": {"type": "string", "pattern": "^[a-z][a-z0-9-]{2,62}$"}},
  "additionalProperties": false},
 "annotations": {"readOnlyHint": true, "category": "read", "riskLevel": "low", "blastRadius": "item"}}`

// lookupOrderPlainTool is the same tool without secure parameters: the host
// path without bindings or secureArguments, for decomposing the overhead.
const lookupOrderPlainTool = `{"name": "lookup_order_plain", "title": "Look up an order",
 "description": "Look up one order of the current tenant by id and return the requested fields.",
 "inputSchema": {"type": "object", "properties": {
   "order_id": {"type": "string", "description": "Order id, e.g. A-1042."},
   "fields": {"type": "array", "items": {"type": "string", "enum": ["status", "total", "items", "customer"]}}},
  "required": ["order_id"], "additionalProperties": false},
 "annotations": {"readOnlyHint": true, "category": "read", "riskLevel": "low", "blastRadius": "item"}}`

var verbs = []string{"search", "get", "list", "describe", "count", "export", "summarize", "find"}
var nouns = []string{"orders", "customers", "invoices", "shipments", "products", "refunds", "tickets", "accounts", "payments", "reviews"}

// realisticTool resembles what database and search servers list: described
// parameters, an enum, nested filter objects, a $defs entry and
// annotations. Every third tool also declares three required secure
// parameters (one routed to a header), one secureInputSchema for every
// secureSchemaGroup tools, as a server's tools share their tenant parameters. The input
// schemas differ from tool to tool (property names, descriptions, enum
// values and bounds follow the tool's noun and index), so that nothing
// keyed by a schema's bytes can be shared between tools.
func realisticTool(i int) string {
	verb, noun := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
	name := fmt.Sprintf("%s_%s_%03d", verb, noun, i)
	singular := strings.TrimSuffix(noun, "s")
	tool := fmt.Sprintf(`{"name": %q, "title": "%s %s",
 "description": "%s %s for the current tenant. Supports free text, status filters and date ranges; results are paginated and sorted by creation time.",
 "inputSchema": {"type": "object", "properties": {
   "query": {"type": "string", "description": "Free-text search over %s (variant %d)."},
   "%s_status": {"type": "string", "enum": ["pending_%d", "paid", "shipped", "cancelled", "%s_on_hold"]},
   "range": {"$ref": "#/$defs/%sRange"},
   "filters": {"type": "array", "items": {"type": "object", "properties": {"%s_field": {"type": "string", "description": "A %s column."}, "op": {"enum": ["eq", "lt", "gt"]}, "value": {}}, "required": ["%s_field", "op"]}},
   "limit": {"type": "integer", "minimum": 1, "maximum": %d, "default": 50},
   "cursor_%d": {"type": "string"}},
  "required": ["query"], "additionalProperties": false,
  "$defs": {"%sRange": {"type": "object", "properties": {"from": {"type": "string", "format": "date"}, "to": {"type": "string", "format": "date"}}}}},
 "annotations": {"readOnlyHint": true, "category": "read", "riskLevel": "low", "blastRadius": "tenant"}`,
		name, verb, noun, strings.ToUpper(verb[:1])+verb[1:], noun,
		noun, i, singular, i, singular, singular, singular, singular, singular, 100+i, i, singular)
	if i%3 == 0 {
		tool += fmt.Sprintf(`,
 "secureInputSchema": {"type": "object", "properties": {
   "tenant_id": {"type": "string", "description": "Tenant identifier supplied by the host application (cluster %d).", "minLength": 1},
   "region": {"type": "string", "enum": ["eu-west1", "us-east1", "us-west1"], "x-mcp-header": "Region"},
   "instance": {"type": "string", "pattern": "^[a-z][a-z0-9-]{2,62}$"}},
  "required": ["tenant_id", "region", "instance"], "additionalProperties": false}`, i/secureSchemaGroup)
	}
	return tool + "}"
}

// secureSchemaGroup realistic tools in a row share one secureInputSchema:
// with 100 tools per server, one per server.
const secureSchemaGroup = 100

// toolsJSON is a tools file: the given fixed tools followed by n realistic
// ones.
func toolsJSON(n int, fixed ...string) []byte {
	return serverToolsJSON(0, n, fixed...)
}

// serverToolsJSON is toolsJSON for the server-th of many servers: its
// realistic tools are numbered from server*n, so no two servers list the
// same definition.
func serverToolsJSON(server, n int, fixed ...string) []byte {
	parts := append([]string(nil), fixed...)
	for i := range n {
		parts = append(parts, realisticTool(server*n+i))
	}
	return []byte("[" + strings.Join(parts, ",\n") + "]")
}

// --- host configuration ----------------------------------------------------

// Session values and the cached source behind the secure parameters.
const (
	benchSubject  = "acme"
	benchInstance = "orders-eu-1"
	benchTenantID = "tenant-acme-7f3a9c" // a canary: must never reach the audit log
)

// vault is the backend's own credential source for tenant_id. The resolver
// caches its values per (session, subject, server, tool, param).
type vault struct{ calls atomic.Int64 }

func (v *vault) Resolve(_ context.Context, req bindings.Request) (bindings.Resolved, error) {
	v.calls.Add(1)
	if req.Subject == "" {
		return bindings.Resolved{}, errors.New("no subject")
	}
	return bindings.Resolved{Value: benchTenantID, Sensitivity: bindings.Secret}, nil
}

// serverBindings binds the three secure parameters of every server
// matching glob.
func serverBindings(glob string) []config.Binding {
	return []config.Binding{{Server: glob, Params: map[string]config.ParamBinding{
		"tenant_id": {Source: "vault", Ref: "tenants/id"},
		"region":    {Value: "eu-west1"},
		"instance":  {Session: "instance"},
	}}}
}

// readsAllowed classifies every tool of the matching servers as a
// low-risk read and allows reads: the approval path runs in full and
// allows the call.
func readsAllowed(glob string) rules.Config {
	str := func(s string) *string { return &s }
	return rules.Config{
		Catalogue: []rules.CatalogueEntry{{Server: glob, Tool: "*", Metadata: risk.RawMetadata{
			Category: str("read"), RiskLevel: str("low"), BlastRadius: str("item"), Reversibility: str("auto"),
			ApprovalRecommendation: str("none"), MinTrustLevel: 1,
		}}},
		Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}},
	}
}

func newHost(cfg *config.Config, v *vault) (*host.Host, error) {
	return newHostWith(cfg, v, nil)
}

// newHostWith also hands the host the transports of in-process servers.
func newHostWith(cfg *config.Config, v *vault, transports map[string]host.TransportFactory) (*host.Host, error) {
	cfg.ApplyDefaults()
	h, err := host.New(host.Options{Config: cfg, Sources: map[string]bindings.Source{"vault": v}, Transports: transports})
	if err != nil {
		return nil, fmt.Errorf("host.New: %w", err)
	}
	return h, nil
}

func newSession(h *host.Host) *host.Session {
	return h.NewSession(host.SessionOptions{Subject: benchSubject, Values: map[string]string{"instance": benchInstance}})
}

// --- servers and bare clients ----------------------------------------------

// httpServer serves an mcptest server on loopback until the fixtures close.
func httpServer(tools []byte) (string, *mcptest.Server, error) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: tools})
	if err != nil {
		return "", nil, fmt.Errorf("mcptest.New: %w", err)
	}
	ts := httptest.NewServer(srv.HTTPHandler())
	onClose(func() { _ = srv.Close(); ts.Close() })
	return ts.URL + "/mcp", srv, nil
}

// bareClient is a plain mcp-go client that declares the secure-params
// extension, exactly as the host does for servers with bindings, and has
// listed the server's tools.
func bareClient(ctx context.Context, tr transport.Interface) (*client.Client, error) {
	cl := client.NewClient(tr, client.WithClientCapabilities(mcp.ClientCapabilities{
		Extensions: map[string]any{mcptest.SecureParamsExtension: map[string]any{}},
	}))
	if err := cl.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "bare-mcp-go", Version: "0"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		_ = cl.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	onClose(func() { _ = cl.Close() })
	// A client lists tools before it calls them, and mcp-go keeps the
	// listing: from it, it mirrors x-mcp-header arguments into Mcp-Param-*
	// headers on every later call, work the host's client does too.
	if _, err := cl.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	return cl, nil
}

// --- the bare client's secure arguments ----------------------------------

// bareSecureArguments are the values the host binds for lookup_order,
// encoded as the host sends them.
var bareSecureArguments = json.RawMessage(`{"instance":"` + benchInstance + `","region":"eu-west1","tenant_id":"` + benchTenantID + `"}`)

// secureSplicer gives a bare mcp-go client what it lacks to send the very
// request the host sends: fixed secureArguments (and the Mcp-Param-Region
// header they imply) on its tools/call of lookup_order. It is the least a
// client can do to reach the same server work, with no bindings, policy,
// audit or redaction: the server-side cost of secure parameters is then on
// both sides of the ratio, and the difference is the host's own.
type secureSplicer struct{ transport.Interface }

// httpSecureSplicer is a secureSplicer that stays an HTTPConnection, as
// mcp-go checks for one to decide on protocol headers.
type httpSecureSplicer struct {
	secureSplicer
	http transport.HTTPConnection
}

func (h httpSecureSplicer) SetProtocolVersion(version string) { h.http.SetProtocolVersion(version) }

func withSecureSplicer(inner transport.Interface) transport.Interface {
	if hc, ok := inner.(transport.HTTPConnection); ok {
		return httpSecureSplicer{secureSplicer{inner}, hc}
	}
	return secureSplicer{inner}
}

func (s secureSplicer) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if request.Method == string(mcp.MethodToolsCall) {
		var err error
		if request, err = spliceSecureArguments(request); err != nil {
			return nil, err
		}
	}
	return s.Interface.SendRequest(ctx, request)
}

func spliceSecureArguments(request transport.JSONRPCRequest) (transport.JSONRPCRequest, error) {
	switch p := request.Params.(type) {
	case map[string]json.RawMessage: // 2026-07-28: mcp-go's field map
		if string(p["name"]) != `"lookup_order"` {
			return request, nil
		}
		params := make(map[string]json.RawMessage, len(p)+1)
		for k, v := range p {
			params[k] = v
		}
		params["secureArguments"] = bareSecureArguments
		request.Params = params
	default:
		encoded, err := json.Marshal(p)
		if err != nil {
			return request, err
		}
		if !bytes.Contains(encoded, []byte(`"name":"lookup_order"`)) {
			return request, nil
		}
		encoded = append(encoded[:len(encoded)-1], `,"secureArguments":`...)
		encoded = append(append(encoded, bareSecureArguments...), '}')
		request.Params = json.RawMessage(encoded)
	}
	header := request.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Mcp-Param-Region", "eu-west1")
	request.Header = header
	return request, nil
}

// --- the per-call fixture --------------------------------------------------

// callFixture is one server with a host session and a bare mcp-go client
// connected to it side by side.
type callFixture struct {
	host    *host.Host
	session *host.Session
	bare    *client.Client
	server  *mcptest.Server // nil for a server in another process
	vault   *vault
	audit   string // the audit file
	// protocol versions negotiated by each path; they must agree
	hostProtocol, bareProtocol string
}

// hostArgs and bareArgs are the same arguments: the host takes the model's
// raw JSON, mcp-go a decoded value.
var (
	hostArgs = json.RawMessage(`{"order_id":"A-1042","fields":["status","total"]}`)
	bareArgs = map[string]any{"order_id": "A-1042", "fields": []any{"status", "total"}}
)

func (f *callFixture) hostCall(ctx context.Context, tool string) error {
	res, err := f.session.CallTool(ctx, "orders", tool, hostArgs)
	if err != nil {
		return err
	}
	if res.IsError() {
		return fmt.Errorf("host call of %s: isError result", tool)
	}
	return nil
}

func (f *callFixture) bareCall(ctx context.Context, tool string) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = bareArgs
	res, err := f.bare.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("bare call of %s: isError result", tool)
	}
	return nil
}

// forget drops the in-process server's recording, which would otherwise
// grow by two messages per call for the whole benchmark; both paths pay it
// equally.
func (f *callFixture) forget() {
	if f.server != nil {
		f.server.Recording().Reset()
	}
}

const perCallServerTools = 20

// newCallFixture connects a host (bindings, allow policy, audit to a file,
// result redaction, the secure-params wire seam) and a bare client to the
// server described by sc (its URL or command).
func newCallFixture(sc *config.Server, hostTransports map[string]host.TransportFactory, bareTransport func() (transport.Interface, error), server *mcptest.Server) (*callFixture, error) {
	dir, err := tempDir("agenthost-bench-audit-")
	if err != nil {
		return nil, err
	}
	f := &callFixture{server: server, vault: &vault{}, audit: filepath.Join(dir, "audit.jsonl")}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"orders": sc},
		Bindings:   serverBindings("orders"),
		Approvals:  readsAllowed("orders"),
		Audit:      config.Audit{Path: f.audit},
	}
	if f.host, err = newHostWith(cfg, f.vault, hostTransports); err != nil {
		return nil, err
	}
	onClose(func() { _ = f.host.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.host.Connect(ctx)
	snap := f.host.Server("orders")
	if snap.Status != host.StatusConnected || !snap.SecureParams {
		return nil, fmt.Errorf("host did not connect with secure params: %s %s", snap.Status, snap.Error)
	}
	f.hostProtocol = snap.ProtocolVersion
	f.session = newSession(f.host)

	tr, err := bareTransport()
	if err != nil {
		return nil, err
	}
	if f.bare, err = bareClient(ctx, withSecureSplicer(tr)); err != nil {
		return nil, err
	}
	f.bareProtocol = f.bare.ProtocolVersion()
	if f.hostProtocol != f.bareProtocol {
		return nil, fmt.Errorf("host negotiated %s but the bare client %s", f.hostProtocol, f.bareProtocol)
	}
	for _, call := range []func() error{
		func() error { return f.hostCall(ctx, "lookup_order") },
		func() error { return f.hostCall(ctx, "lookup_order_plain") },
		func() error { return f.bareCall(ctx, "lookup_order") },
	} {
		if err := call(); err != nil {
			return nil, fmt.Errorf("warm-up call: %w", err)
		}
	}
	return f, nil
}

// inProcessFixture: the mcptest server in this process, reached by both
// clients through its in-process transport (no socket, no process; each
// message is still encoded and decoded on both sides, as with mcp-go's own
// in-process transport).
func inProcessFixture(tb testing.TB) *callFixture {
	return sharedFixture(tb, "call/inprocess", func() (*callFixture, error) {
		srv, err := mcptest.New(mcptest.Options{ToolsJSON: toolsJSON(perCallServerTools, lookupOrderTool, lookupOrderPlainTool)})
		if err != nil {
			return nil, fmt.Errorf("mcptest.New: %w", err)
		}
		onClose(func() { _ = srv.Close() })
		dial := func() (transport.Interface, error) { return srv.InProcessTransport(), nil }
		return newCallFixture(&config.Server{Type: config.TransportStdio, Command: "in-process", CallTimeout: time.Minute},
			map[string]host.TransportFactory{"orders": dial}, dial, srv)
	})
}

// httpFixture: the mcptest server on loopback HTTP in this process.
func httpFixture(tb testing.TB) *callFixture {
	return sharedFixture(tb, "call/http", func() (*callFixture, error) {
		url, srv, err := httpServer(toolsJSON(perCallServerTools, lookupOrderTool, lookupOrderPlainTool))
		if err != nil {
			return nil, err
		}
		return newCallFixture(&config.Server{Type: config.TransportHTTP, URL: url, CallTimeout: time.Minute}, nil,
			func() (transport.Interface, error) { return transport.NewStreamableHTTP(url) }, srv)
	})
}

// stdioFixture: the agenthost-testserver binary as a child process, one for the
// host and one for the bare client.
func stdioFixture(tb testing.TB) *callFixture {
	bin := binary(tb, "agenthost-testserver")
	return sharedFixture(tb, "call/stdio", func() (*callFixture, error) {
		dir, err := tempDir("agenthost-bench-stdio-")
		if err != nil {
			return nil, err
		}
		tools := filepath.Join(dir, "tools.json")
		if err := os.WriteFile(tools, toolsJSON(perCallServerTools, lookupOrderTool, lookupOrderPlainTool), 0o600); err != nil {
			return nil, err
		}
		args := []string{"--tools", tools}
		return newCallFixture(&config.Server{Type: config.TransportStdio, Command: bin, Args: args, CallTimeout: time.Minute}, nil,
			func() (transport.Interface, error) {
				// The host starts its server in a session of its own (no
				// supervisor here: the library host has none), and so does
				// the bare client: the same process attributes on both sides.
				return transport.NewStdioWithOptions(bin, nil, args, transport.WithCommandFunc(sameAttrCommand)), nil
			}, nil)
	})
}

// sameAttrCommand starts the bare client's server as the host starts its
// own: childproc.Attr's session and death signal.
func sameAttrCommand(_ context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = childproc.Attr(syscall.SIGKILL)
	return cmd, nil
}
