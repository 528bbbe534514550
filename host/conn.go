package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/childproc"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/secureparams"
	"github.com/agenthost/agenthost/internal/glob"
	"github.com/agenthost/agenthost/llmview"
)

// ServerStatus is the state of one server connection.
type ServerStatus string

// Server states.
const (
	StatusConnecting ServerStatus = "connecting"
	StatusConnected  ServerStatus = "connected"
	StatusError      ServerStatus = "error"
	StatusDisabled   ServerStatus = "disabled"
)

// ToolStatus says whether a tool is offered to the model.
type ToolStatus string

// Tool states (`tools --json`, docs/cli.md).
const (
	ToolActive   ToolStatus = "active"   // in the model view
	ToolHidden   ToolStatus = "hidden"   // valid but not offered
	ToolExcluded ToolStatus = "excluded" // invalid definition
)

// CatalogTool is one tool as the host knows it. Tool holds the raw definition
// exactly as the server listed it. Status and Reason here are the static
// verdicts (definition validity, allow/deny filters); per-session verdicts
// (unbindable secure parameters, trust level) are added by the model view.
type CatalogTool struct {
	Server string
	Tool   *secureparams.Tool
	Status ToolStatus
	Reason string
	// Parameters is what the model is sent for this tool
	// (llmview.Parameters of its inputSchema), computed once.
	Parameters json.RawMessage
	// verdicts are the host's answers about this definition (see
	// toolVerdicts); nil for a CatalogTool built outside buildCatalog.
	verdicts *toolVerdicts
	// parsed: Tool is the parsed definition (not a placeholder for one
	// that was malformed or too large), so a re-listing may reuse it.
	parsed bool
}

// ServerSnapshot is an immutable view of one server's catalog. A new snapshot
// replaces the old one on every (re)listing; Generation grows each time.
type ServerSnapshot struct {
	Name            string
	Status          ServerStatus
	Error           string
	ProtocolVersion string
	// SecureParams reports that the secure-params extension was negotiated.
	SecureParams bool
	// Extension is the negotiated extension id ("" when none).
	Extension string
	Tools     []*CatalogTool
	// Warnings are operator notes about the server as a whole.
	Warnings   []string
	Generation uint64
	byName     map[string]*CatalogTool
	// inputHeaders: some tool routes inputSchema arguments to headers.
	inputHeaders bool
}

// Tool returns the named tool, or nil.
func (s *ServerSnapshot) Tool(name string) *CatalogTool {
	if s == nil {
		return nil
	}
	return s.byName[name]
}

// failed is the snapshot of a server that could not be reached: it keeps
// the last known tools, so the model may still call them and that call
// reconnects (with backoff) once the server is back.
func (s *ServerSnapshot) failed(reason string) *ServerSnapshot {
	return &ServerSnapshot{
		Name: s.Name, Status: StatusError, Error: reason,
		ProtocolVersion: s.ProtocolVersion, SecureParams: s.SecureParams, Extension: s.Extension,
		Tools: s.Tools, byName: s.byName, inputHeaders: s.inputHeaders, Warnings: s.Warnings,
	}
}

// retryDue reports a failed server whose backoff has passed.
func (c *conn) retryDue() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client == nil && c.failures > 0 && !c.now().Before(c.retryAt)
}

// Listing limits: a hostile server must not make the host loop or hoard.
const (
	maxListPages = 1000
	maxTools     = 10000
)

// conn owns one MCP server connection: it connects, lists tools, reconnects
// with backoff after connection-class failures, and refreshes the catalog on
// tools/list_changed.
type conn struct {
	name          string
	cfg           *config.Server
	declareSecure bool
	logger        *slog.Logger
	clientInfo    mcp.Implementation
	elicitation   client.ElicitationHandler
	onChange      func(*ServerSnapshot)
	transport     TransportFactory
	supervisor    *childproc.Supervisor
	now           func() time.Time

	// maxResponseBytes bounds one message read from the server;
	// maxDefinitionBytes one tool definition (limits section).
	maxResponseBytes   int64
	maxDefinitionBytes int64

	// life is cancelled by close; it owns the refresh goroutine.
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	refreshCh chan struct{}

	mu         sync.Mutex
	client     *client.Client
	snapshot   *ServerSnapshot
	failures   int
	retryAt    time.Time
	stopListen func()
	generation uint64
}

func newConn(parent context.Context, name string, cfg *config.Server, declareSecure bool, opts connOptions) *conn {
	life, cancel := context.WithCancel(parent)
	c := &conn{
		name:          name,
		cfg:           cfg,
		declareSecure: declareSecure,
		logger:        opts.logger.With("server", name),
		clientInfo:    opts.clientInfo,
		elicitation:   opts.elicitation,
		onChange:      opts.onChange,
		transport:     opts.transport,
		supervisor:    opts.supervisor,
		now:           time.Now,

		maxResponseBytes:   orDefault(opts.limits.MaxResponseBytes, config.DefaultMaxResponseBytes),
		maxDefinitionBytes: orDefault(opts.limits.MaxDefinitionBytes, config.DefaultMaxDefinitionBytes),
		life:               life,
		cancel:             cancel,
		refreshCh:          make(chan struct{}, 1),
	}
	status := StatusConnecting
	if cfg.Disabled {
		status = StatusDisabled
	}
	c.snapshot = &ServerSnapshot{Name: name, Status: status}
	c.wg.Add(1)
	go c.refreshLoop()
	return c
}

type connOptions struct {
	logger      *slog.Logger
	clientInfo  mcp.Implementation
	elicitation client.ElicitationHandler
	onChange    func(*ServerSnapshot)
	transport   TransportFactory // nil: built from the config
	supervisor  *childproc.Supervisor
	limits      config.Limits // zero values: the defaults
}

// orDefault is v, or def when v is not set.
func orDefault(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// Snapshot returns the current catalog of this server.
func (c *conn) Snapshot() *ServerSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshot
}

func (c *conn) setSnapshot(s *ServerSnapshot) {
	c.mu.Lock()
	c.generation++
	s.Generation = c.generation
	c.snapshot = s
	c.mu.Unlock()
	if c.onChange != nil {
		c.onChange(s)
	}
}

// close stops the connection and its goroutines.
func (c *conn) close() {
	c.cancel()
	c.mu.Lock()
	cl, stop := c.client, c.stopListen
	c.client, c.stopListen = nil, nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	if cl != nil {
		_ = cl.Close()
	}
	c.wg.Wait()
}

// connect establishes the connection (if needed) and lists tools. It honours
// the reconnect backoff: while a retry is not yet due it fails fast.
func (c *conn) connect(ctx context.Context) (*client.Client, error) {
	if c.cfg.Disabled {
		return nil, fmt.Errorf("server %s is disabled: %w", c.name, ErrServerUnavailable)
	}
	c.mu.Lock()
	if c.client != nil {
		cl := c.client
		c.mu.Unlock()
		return cl, nil
	}
	if wait := c.retryAt.Sub(c.now()); c.failures > 0 && wait > 0 {
		c.mu.Unlock()
		return nil, fmt.Errorf("server %s: reconnecting in %s: %w", c.name, wait.Round(time.Millisecond), ErrServerUnavailable)
	}
	c.mu.Unlock()

	timeout := c.cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cl, snap, err := c.dial(cctx)
	if err != nil {
		err = tidyError(err)
		c.mu.Lock()
		c.failures++
		c.retryAt = c.now().Add(backoff(c.failures))
		c.mu.Unlock()
		c.setSnapshot(c.Snapshot().failed(err.Error()))
		return nil, fmt.Errorf("connect %s: %w: %w", c.name, ErrServerUnavailable, err)
	}
	c.mu.Lock()
	if c.life.Err() != nil {
		c.mu.Unlock()
		_ = cl.Close()
		return nil, fmt.Errorf("server %s: host is shutting down: %w", c.name, ErrServerUnavailable)
	}
	c.client = cl
	c.failures = 0
	c.mu.Unlock()
	c.setSnapshot(snap)
	c.listenForChanges(cl)
	return cl, nil
}

// tidyError keeps err for errors.Is/As but drops from its message a
// segment repeated right after itself: mcp-go wraps some failures twice
// ("failed to send request: failed to send request: Post ...").
func tidyError(err error) error {
	msg := err.Error()
	parts := strings.Split(msg, ": ")
	kept := parts[:1]
	for _, p := range parts[1:] {
		if p != kept[len(kept)-1] {
			kept = append(kept, p)
		}
	}
	if len(kept) == len(parts) {
		return err
	}
	return &tidiedError{msg: strings.Join(kept, ": "), err: err}
}

type tidiedError struct {
	msg string
	err error
}

func (e *tidiedError) Error() string { return e.msg }
func (e *tidiedError) Unwrap() error { return e.err }

// withStderr adds to the error of a stdio server that failed to start the
// last lines it wrote to stderr ("GITHUB_TOKEN is not set" is the usual
// first failure), with the values of its configured env masked.
func (c *conn) withStderr(err error, inner transport.Interface) error {
	sp, ok := inner.(*stdioProcess)
	if !ok {
		return err
	}
	tail := sp.stderr.tail()
	if len(tail) == 0 {
		return err
	}
	text := strings.Join(tail, " | ")
	for _, v := range c.cfg.Env {
		if len(v) >= 4 {
			text = strings.ReplaceAll(text, v, "[REDACTED]")
		}
	}
	return fmt.Errorf("%w; the server's stderr ends with: %s", err, text)
}

// backoff is the wait before reconnect attempt n+1 after n consecutive
// failures: 0.5s, 1s, 2s ... capped at 30s. The first reconnect after a lost
// connection is immediate (failures is 0 then).
func backoff(failures int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < failures && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// dial starts the transport, negotiates the protocol and lists tools.
func (c *conn) dial(ctx context.Context) (*client.Client, *ServerSnapshot, error) {
	pending := &pendingRequests{}
	inner, err := c.newTransport(pending)
	if err != nil {
		return nil, nil, err
	}
	var opts []client.ClientOption
	extensions := c.extensionIDs()
	if len(extensions) > 0 {
		ext := make(map[string]any, len(extensions))
		for _, id := range extensions {
			ext[id] = map[string]any{}
		}
		opts = append(opts, client.WithClientCapabilities(mcp.ClientCapabilities{Extensions: ext}))
	}
	switch c.cfg.ProtocolVersion {
	case config.ProtocolLegacy, config.ProtocolModern:
		opts = append(opts, client.WithProtocolVersion(c.cfg.ProtocolVersion))
	}
	if c.elicitation != nil {
		opts = append(opts, client.WithElicitationHandler(c.elicitation))
	}
	cl := client.NewClient(newWireTransport(inner, c, pending), opts...)
	// The transport lives as long as the connection, not the dial deadline:
	// a stdio transport keeps the context it was started with.
	if err := cl.Start(c.life); err != nil {
		_ = cl.Close()
		return nil, nil, c.withStderr(fmt.Errorf("start transport: %w", err), inner)
	}
	ok := false
	defer func() {
		if !ok {
			_ = cl.Close()
		}
	}()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = c.clientInfo
	if _, err := cl.Initialize(ctx, init); err != nil {
		// Closed first, so that everything the child wrote is read.
		_ = cl.Close()
		return nil, nil, c.withStderr(fmt.Errorf("initialize: %w", err), inner)
	}
	negotiated := cl.ProtocolVersion()
	if pinned := c.cfg.ProtocolVersion; pinned == config.ProtocolModern && negotiated != pinned {
		return nil, nil, fmt.Errorf("protocol version pinned to %s but the server speaks %s", pinned, negotiated)
	}
	snap, err := c.list(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	ok = true
	return cl, snap, nil
}

// extensionIDs are the secure-params extension ids to declare. SEP-3221
// makes binding opt-in: declared only for servers with bindings configured.
func (c *conn) extensionIDs() []string {
	if !c.declareSecure {
		return nil
	}
	if len(c.cfg.SecureParams.Extensions) == 0 {
		return []string{config.DefaultSecureParamsExtension}
	}
	return c.cfg.SecureParams.Extensions
}

// negotiatedExtension is the first of our extension ids the server advertised.
func (c *conn) negotiatedExtension(cl *client.Client) string {
	advertised := cl.GetServerCapabilities().Extensions
	for _, id := range c.extensionIDs() {
		// An extension advertised as null is not advertised: its
		// settings object is missing.
		if v, ok := advertised[id]; ok && v != nil {
			return id
		}
	}
	return ""
}

// list fetches every tools/list page raw and builds a snapshot. mcp-go
// never sees the definitions (the wire seam hands it an empty page), so
// the host's own parsing is the only one.
func (c *conn) list(ctx context.Context, cl *client.Client) (*ServerSnapshot, error) {
	var listed []secureparams.ListedTool
	seen := map[string]bool{}
	cursor := mcp.Cursor("")
	for page := 0; ; page++ {
		if page >= maxListPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxListPages)
		}
		pages := &rawPages{}
		req := mcp.ListToolsRequest{}
		req.Params.Cursor = cursor
		_, err := cl.ListToolsByPage(withRawPages(ctx, pages), req)
		raw := pages.last()
		if raw == nil {
			if err == nil {
				err = errors.New("empty result")
			}
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		// mcp-go's own transports decode every response with
		// encoding/json, which has validated the page; a transport from
		// Options.Transports may not have.
		split := secureparams.SplitValidToolsPage
		if c.transport != nil {
			split = secureparams.SplitToolsPage
		}
		body, err := split(raw)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		listed = append(listed, body.Tools...)
		if len(listed) > maxTools {
			return nil, fmt.Errorf("tools/list: more than %d tools", maxTools)
		}
		if body.NextCursor == nil || *body.NextCursor == "" {
			break
		}
		if seen[*body.NextCursor] {
			return nil, fmt.Errorf("tools/list: cursor %q repeats", truncate(*body.NextCursor, 40))
		}
		seen[*body.NextCursor] = true
		cursor = mcp.Cursor(*body.NextCursor)
	}
	ext := c.negotiatedExtension(cl)
	snap := c.snapshotOf(listed, cl.ProtocolVersion(), ext)
	if id := c.undeclaredExtension(cl); id != "" {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("the server supports secure parameters (%s), but no binding names server %q, "+
			"so agenthost did not declare the extension and the server's tools that take secure values are not offered; "+
			"add a bindings entry for the server (docs/config.md)", id, c.name))
		for _, ct := range snap.Tools {
			if ct.Reason == reasonSecureNotNegotiated {
				ct.Reason += " (no binding names this server: add a bindings entry for it)"
			}
		}
	}
	return snap, nil
}

// reasonSecureNotNegotiated excludes a tool with a secureInputSchema from a
// server the extension was not negotiated with.
const reasonSecureNotNegotiated = "declares secureInputSchema but the secure-params extension was not negotiated"

// undeclaredExtension is the secure-params extension id the server
// advertises while the host did not declare the extension (no binding
// names the server); "" otherwise.
func (c *conn) undeclaredExtension(cl *client.Client) string {
	if c.declareSecure {
		return ""
	}
	ids := c.cfg.SecureParams.Extensions
	if len(ids) == 0 {
		ids = []string{config.DefaultSecureParamsExtension}
	}
	advertised := cl.GetServerCapabilities().Extensions
	for _, id := range ids {
		if _, ok := advertised[id]; ok {
			return id
		}
	}
	return ""
}

// snapshotOf builds the snapshot of a complete listing.
func (c *conn) snapshotOf(listed []secureparams.ListedTool, protocolVersion, ext string) *ServerSnapshot {
	snap := &ServerSnapshot{
		Name:            c.name,
		Status:          StatusConnected,
		ProtocolVersion: protocolVersion,
		SecureParams:    ext != "",
		Extension:       ext,
	}
	snap.Tools, snap.byName = buildCatalogLimited(c.name, listed, ext != "", c.cfg.Tools, c.Snapshot().parsedByRaw(), c.maxDefinitionBytes)
	for _, t := range snap.Tools {
		if t.Status == ToolExcluded {
			c.logger.Warn("tool excluded", "tool", t.Tool.Name, "reason", t.Reason)
		} else if t.Tool.InputHeaderTool() != nil {
			snap.inputHeaders = true
		}
	}
	return snap
}

// parsedByRaw indexes a snapshot's parsed definitions by their raw bytes,
// so a re-listing reuses the analysis of every definition that did not
// change (parsed tools are immutable once validated).
func (s *ServerSnapshot) parsedByRaw() map[string]*CatalogTool {
	if s == nil || len(s.Tools) == 0 {
		return nil
	}
	m := make(map[string]*CatalogTool, len(s.Tools))
	for _, ct := range s.Tools {
		if len(ct.Tool.Raw) > 0 {
			m[string(ct.Tool.Raw)] = ct
		}
	}
	return m
}

// buildCatalog parses and validates raw tool definitions. A malformed or
// invalid definition excludes that tool only, never the server. A
// definition byte-identical to one in prev reuses its parsed form.
func buildCatalog(server string, listed []secureparams.ListedTool, secureNegotiated bool, filter config.ToolFilter, prev map[string]*CatalogTool) ([]*CatalogTool, map[string]*CatalogTool) {
	return buildCatalogLimited(server, listed, secureNegotiated, filter, prev, 0)
}

// buildCatalogLimited is buildCatalog where a definition larger than
// maxDefinition (limits.maxDefinitionBytes; 0: no limit) is excluded
// unparsed: it would be sent to the model with every request.
func buildCatalogLimited(server string, listed []secureparams.ListedTool, secureNegotiated bool, filter config.ToolFilter, prev map[string]*CatalogTool, maxDefinition int64) ([]*CatalogTool, map[string]*CatalogTool) {
	tools := make([]*CatalogTool, 0, len(listed))
	count := make(map[string]int, len(listed))
	schemas := secureparams.NewSchemaCache()
	for i, def := range listed {
		ct := &CatalogTool{Server: server, Status: ToolActive}
		var t *secureparams.Tool
		var err error
		var params json.RawMessage
		if maxDefinition > 0 && int64(len(def.Raw)) > maxDefinition {
			ct.Tool = &secureparams.Tool{Name: fmt.Sprintf("#%d", i)}
			ct.Status, ct.Reason = ToolExcluded, oversizedDefinition(def.Raw, maxDefinition)
			tools = append(tools, ct)
			continue
		}
		if old, ok := prev[string(def.Raw)]; ok && old.parsed {
			t, params, ct.verdicts = old.Tool, old.Parameters, old.verdicts
		} else {
			t, err = def.Parse(schemas)
		}
		if ct.verdicts == nil {
			ct.verdicts = &toolVerdicts{}
		}
		if err != nil {
			ct.Tool = &secureparams.Tool{Name: fmt.Sprintf("#%d", i), Raw: def.Raw}
			ct.Status, ct.Reason = ToolExcluded, "malformed definition: "+err.Error()
			tools = append(tools, ct)
			continue
		}
		ct.Tool, ct.parsed = t, true
		ct.Parameters = params
		count[t.Name]++
		switch {
		case t.Name == "":
			// Nothing can name it: not in a filter, a binding, a rule or a
			// call.
			ct.Status, ct.Reason = ToolExcluded, "the tool has an empty name"
		case t.HasSecureSchema && !secureNegotiated:
			ct.Status, ct.Reason = ToolExcluded, reasonSecureNotNegotiated
		default:
			if err := secureparams.Validate(t); err != nil {
				ct.Status, ct.Reason = ToolExcluded, exclusionReason(err)
			} else if !filterAllows(filter, t.Name) {
				ct.Status, ct.Reason = ToolHidden, fmt.Sprintf("filtered out by the server's tools allow/deny list (mcpServers.%s.tools in the config; change it to offer the tool)", server)
			}
		}
		tools = append(tools, ct)
	}
	byName := make(map[string]*CatalogTool, len(tools))
	for _, ct := range tools {
		if ct.Status != ToolExcluded && ct.Parameters == nil {
			// The definition parsed, so its inputSchema is valid JSON.
			ct.Parameters = llmview.ParametersOfValid(ct.Tool.InputSchema)
		}
		if count[ct.Tool.Name] > 1 {
			// Which definition would the server execute? Unknowable: fail closed.
			ct.Status, ct.Reason = ToolExcluded, fmt.Sprintf("the server listed %d tools named %q", count[ct.Tool.Name], ct.Tool.Name)
		}
		if _, dup := byName[ct.Tool.Name]; !dup {
			byName[ct.Tool.Name] = ct
		}
	}
	return tools, byName
}

// oversizedDefinition is the exclusion reason of a definition larger than
// limits.maxDefinitionBytes, naming the tool when its name can be read.
func oversizedDefinition(raw json.RawMessage, limit int64) string {
	var named struct {
		Name string `json:"name"`
	}
	what := "the definition"
	if json.Unmarshal(raw, &named) == nil && named.Name != "" {
		what = fmt.Sprintf("the definition of %q", truncate(named.Name, 80))
	}
	return fmt.Sprintf("%s is %s, more than limits.maxDefinitionBytes (%s)", what, byteSize(int64(len(raw))), byteSize(limit))
}

func exclusionReason(err error) string {
	var ex *secureparams.ExclusionError
	if errors.As(err, &ex) {
		return ex.Reason
	}
	return err.Error()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// refresh re-lists tools on the live connection.
func (c *conn) refresh(ctx context.Context) error {
	c.mu.Lock()
	cl := c.client
	c.mu.Unlock()
	if cl == nil {
		_, err := c.connect(ctx)
		return err
	}
	snap, err := c.list(ctx, cl)
	if err != nil {
		return fmt.Errorf("refresh %s: %w", c.name, err)
	}
	c.logger.Debug("refreshed", "tools", len(snap.Tools))
	c.setSnapshot(snap)
	return nil
}

// requestRefresh asks the refresh loop to re-list; bursts coalesce.
func (c *conn) requestRefresh() {
	select {
	case c.refreshCh <- struct{}{}:
	default:
	}
}

func (c *conn) refreshLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.refreshCh:
			ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
			if err := c.refresh(ctx); err != nil && c.life.Err() == nil {
				c.logger.Warn("tool list refresh failed", "err", err)
			}
			cancel()
		}
	}
}

// listenForChanges wires tools/list_changed to a refresh. Legacy connections
// deliver notifications on the transport; modern ones need an opt-in
// subscriptions/listen stream.
func (c *conn) listenForChanges(cl *client.Client) {
	acked := make(chan struct{})
	var ackOnce sync.Once
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		c.logger.Debug("notification", "method", n.Method)
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged:
			c.requestRefresh()
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			ackOnce.Do(func() { close(acked) })
		}
	})
	caps := cl.GetServerCapabilities()
	if !mcp.IsModernProtocol(cl.ProtocolVersion()) || caps.Tools == nil || !caps.Tools.ListChanged {
		return
	}
	stop, err := cl.ListenAsync(c.life, mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) {
		c.logger.Debug("subscriptions/listen ended", "err", err)
	})
	if err != nil {
		c.logger.Debug("subscriptions/listen not available", "err", err)
		return
	}
	c.mu.Lock()
	c.stopListen = stop
	c.mu.Unlock()
	// A change the server makes before the stream is established would be
	// lost: wait (briefly) for the server to acknowledge the subscription.
	timer := time.NewTimer(2 * time.Second)
	defer timer.Stop()
	select {
	case <-acked:
	case <-timer.C:
		c.logger.Debug("subscriptions/listen not acknowledged in time")
	case <-c.life.Done():
	}
}

// dropClient forgets a broken connection so the next call reconnects.
func (c *conn) dropClient(cl *client.Client, cause error) {
	c.mu.Lock()
	if c.client != cl {
		c.mu.Unlock()
		return
	}
	c.client = nil
	stop := c.stopListen
	c.stopListen = nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	_ = cl.Close()
	c.logger.Warn("connection lost", "err", cause)
	c.setSnapshot(c.Snapshot().failed("connection lost: " + cause.Error()))
}

// isConnectionFailure reports errors after which the connection is unusable.
// A protocol error is not one: messages are framed (a line, a body, an
// event), so the next message is read as if the bad one was never sent.
func isConnectionFailure(err error) bool {
	if errors.Is(err, ErrProtocol) {
		return false
	}
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

// newTransport builds the inner mcp-go transport for the server's config.
// Its reads are bounded by limits.maxResponseBytes, and messages that are
// not JSON-RPC fail the requests in pending.
func (c *conn) newTransport(pending *pendingRequests) (transport.Interface, error) {
	if c.transport != nil {
		tr, err := c.transport()
		if err != nil {
			return nil, fmt.Errorf("transport: %w", err)
		}
		if tr == nil {
			return nil, errors.New("transport: the factory returned none")
		}
		return tr, nil
	}
	switch c.cfg.Type {
	case config.TransportStdio, "":
		if c.cfg.Command == "" {
			return nil, errors.New("no command configured")
		}
		return newStdioProcess(c, c.maxResponseBytes, pending.failAll), nil
	case config.TransportHTTP:
		return transport.NewStreamableHTTP(c.cfg.URL,
			transport.WithHTTPHeaders(c.cfg.Headers),
			transport.WithHTTPLogger(c.logger),
			transport.WithHTTPBasicClient(httpClient(c.maxResponseBytes, pending.failAll)),
		)
	case config.TransportSSE:
		return transport.NewSSE(c.cfg.URL,
			transport.WithHeaders(c.cfg.Headers),
			transport.WithSSELogger(c.logger),
			transport.WithHTTPClient(httpClient(c.maxResponseBytes, pending.failAll)),
		)
	default:
		return nil, fmt.Errorf("unknown transport type %q", c.cfg.Type)
	}
}

// httpClient is the client of one HTTP server connection. Go's default
// keeps two idle connections per host: with many sessions calling one
// server at once, almost every call would open (and leave in TIME_WAIT) a
// new TCP connection. No overall timeout: responses may stream; calls are
// bounded by their context (callTimeout).
func httpClient(maxBody int64, failAll func(*ProtocolError)) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Requests beyond MaxConnsPerHost wait for a free connection instead of
	// dialing (and later closing) one each: under a burst of sessions that
	// is both faster and kinder to the server.
	t.MaxConnsPerHost = 64
	t.MaxIdleConnsPerHost = 64
	t.MaxIdleConns = 256
	return &http.Client{Transport: &limitedTransport{base: t, max: maxBody, failAll: failAll}}
}

// command builds the stdio child with an explicit environment: only the
// configured env plus a few basics (childproc.Env). The host's own
// environment (API keys, plugin secrets) never leaks into servers. The
// server leads a session of its own so that its whole tree can be ended;
// with a supervisor, the supervisor leads it and ends the tree even when
// the host is SIGKILLed.
func (c *conn) command(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = childproc.Env(os.Getenv, c.cfg.Env)
	cmd.Dir = c.cfg.Cwd
	if c.supervisor != nil && childproc.Runnable(cmd) {
		cmd.SysProcAttr = childproc.Attr(syscall.SIGTERM)
		c.supervisor.Wrap(cmd)
	} else {
		cmd.SysProcAttr = childproc.Attr(syscall.SIGKILL)
	}
	return cmd, nil
}

// lineLogger turns a child's stderr into debug log lines, and keeps the
// last few (see tail) for the error of a server that fails to start.
type lineLogger struct {
	logger *slog.Logger
	msg    string
	mu     sync.Mutex
	buf    []byte
	last   []string // at most stderrTailLines, each at most stderrTailLineLen
}

// The stderr kept for errors: the last lines, each cut.
const (
	stderrTailLines   = 5
	stderrTailLineLen = 300
)

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64*1024 {
		l.line(string(l.buf))
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *lineLogger) line(text string) {
	l.logger.Debug(l.msg, "line", text)
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if len(text) > stderrTailLineLen {
		text = text[:stderrTailLineLen] + "…"
	}
	if len(l.last) == stderrTailLines {
		copy(l.last, l.last[1:])
		l.last = l.last[:stderrTailLines-1]
	}
	l.last = append(l.last, text)
}

// tail returns the last lines written, an unfinished one included.
func (l *lineLogger) tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.last)
	if rest := strings.TrimSpace(string(l.buf)); rest != "" {
		out = append(out, rest)
	}
	return out
}

// filterAllows reports whether the filter offers the named tool: deny wins,
// an empty allow list means all.
func filterAllows(f config.ToolFilter, name string) bool {
	for _, g := range f.Deny {
		if glob.Match(g, name) {
			return false
		}
	}
	if len(f.Allow) == 0 {
		return true
	}
	for _, g := range f.Allow {
		if glob.Match(g, name) {
			return true
		}
	}
	return false
}
