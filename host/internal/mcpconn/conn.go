package mcpconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/secureparams"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/internal/httpredirect"
)

// TransportFactory makes a new, unstarted transport to one server.
type TransportFactory func() (transport.Interface, error)

// Options configure one connection. Everything a connection needs from its
// owner is here, so a new knob (an HTTP round tripper, a span around
// calls, a check of listed definitions) is one more field.
type Options struct {
	// Config is the server's entry in mcpServers; required.
	Config *config.Server
	// DeclareSecure declares the secure-params extension to the server
	// (SEP-3221 makes it opt-in: only for servers that bindings name).
	DeclareSecure bool
	// Logger receives operator logs; nil discards them.
	Logger *slog.Logger
	// ClientInfo is sent to the server as clientInfo.
	ClientInfo mcp.Implementation
	// Elicitation answers the server's elicitation requests; nil leaves
	// them to mcp-go (which declines).
	Elicitation client.ElicitationHandler
	// OnChange is called with every new snapshot.
	OnChange func(*ServerSnapshot)
	// Transport supplies the connection instead of the config's command
	// or URL; nil builds it from the config.
	Transport TransportFactory
	// Supervisor runs stdio servers under a process-tree supervisor.
	Supervisor *childproc.Supervisor
	// Sandbox confines a stdio server (config.Config.ServerSandbox); an
	// enforced one needs Supervisor.
	Sandbox config.Sandbox
	// Admit, when set, checks the file a stdio server's command names
	// (childproc.LookPath) against the managed policy at every start and
	// returns the file to execute (config.Config.AdmitExecutable); an
	// error refuses the start.
	Admit func(path string) (string, error)
	// Limits bound what is read from the server; zero values: defaults.
	Limits config.Limits
	// HTTPRoundTripper, when set, wraps the round tripper of a server
	// reached by url (under the response limits): the OAuth client adds
	// its tokens there.
	HTTPRoundTripper func(base http.RoundTripper) http.RoundTripper
	// AdmitURL, when set, is asked about every redirect target of a
	// server reached by url (the managed policy's allowedServers); its
	// error refuses the redirect. Redirects to another origin are refused
	// regardless (internal/httpredirect).
	AdmitURL func(*url.URL) error
	// OnReconnect, when set, is called each time a connection is
	// established after an earlier one (lost or closed): a reconnect. The
	// first connection is not one.
	OnReconnect func()
}

// RetryDue reports a failed server whose backoff has passed.
func (c *Conn) RetryDue() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client == nil && c.failures > 0 && !c.now().Before(c.retryAt)
}

// Listing limits: a hostile server must not make the host loop or hoard.
const (
	maxListPages = 1000
	maxTools     = 10000
)

// Conn owns one MCP server connection: it connects, lists tools, reconnects
// with backoff after connection-class failures, refreshes the catalog on
// tools/list_changed, and runs tool calls (Call).
type Conn struct {
	name          string
	cfg           *config.Server
	declareSecure bool
	logger        *slog.Logger
	clientInfo    mcp.Implementation
	elicitation   client.ElicitationHandler
	onChange      func(*ServerSnapshot)
	transport     TransportFactory
	supervisor    *childproc.Supervisor
	sandbox       config.Sandbox
	admit         func(path string) (string, error)
	// enforcement is what the kernel enforces for a stdio server (nil for
	// a server reached by url), as reported in every snapshot.
	enforcement *childproc.Enforcement
	wrapHTTP    func(http.RoundTripper) http.RoundTripper
	redirects   httpredirect.Policy
	now         func() time.Time
	onReconnect func()

	// maxResponseBytes bounds one message read from the server;
	// maxDefinitionBytes one tool definition (limits section).
	maxResponseBytes   int64
	maxDefinitionBytes int64

	// life is cancelled by Close; it owns the refresh goroutine.
	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	refreshCh chan struct{}

	// progress routes notifications/progress to the calls that asked;
	// taskWatches notifications/tasks to the calls whose tasks they name.
	progress    progressRoutes
	taskWatches taskWatches

	mu         sync.Mutex
	client     *client.Client
	wire       *wireTransport // the seam of client
	snapshot   *ServerSnapshot
	failures   int
	retryAt    time.Time
	lastErr    error // the last connect failure, kept in backoff errors' chain
	stopListen func()
	generation uint64
	// listings counts the listings started; installed is the number of
	// the one the snapshot holds (see installListing).
	listings  uint64
	installed uint64
	// connectedOnce: a connection was established before, so the next
	// one is a reconnect.
	connectedOnce bool
	// dialing is closed when the connect in flight ends; nil when none
	// is. Concurrent connects wait for it instead of dialing again (a
	// second stdio child that the first's client would overwrite).
	dialing chan struct{}
}

// New makes the connection to the named server. It does not connect:
// Connect, Refresh and Call do, lazily. Close stops it; parent ending
// stops its background work too.
func New(parent context.Context, name string, opts Options) *Conn {
	life, cancel := context.WithCancel(parent)
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg := opts.Config
	c := &Conn{
		name:          name,
		cfg:           cfg,
		declareSecure: opts.DeclareSecure,
		logger:        logger.With("server", name),
		clientInfo:    opts.ClientInfo,
		elicitation:   opts.Elicitation,
		onChange:      opts.OnChange,
		transport:     opts.Transport,
		supervisor:    opts.Supervisor,
		sandbox:       opts.Sandbox,
		admit:         opts.Admit,
		wrapHTTP:      opts.HTTPRoundTripper,
		redirects:     httpredirect.Policy{Admit: opts.AdmitURL},
		now:           time.Now,
		onReconnect:   opts.OnReconnect,

		maxResponseBytes:   orDefault(opts.Limits.MaxResponseBytes, config.DefaultMaxResponseBytes),
		maxDefinitionBytes: orDefault(opts.Limits.MaxDefinitionBytes, config.DefaultMaxDefinitionBytes),
		life:               life,
		cancel:             cancel,
		refreshCh:          make(chan struct{}, 1),
	}
	status := StatusConnecting
	if cfg.Disabled {
		status = StatusDisabled
	}
	c.enforcement = sandboxEnforcement(cfg, opts.Sandbox)
	c.snapshot = &ServerSnapshot{Name: name, Status: status, Sandbox: c.enforcement}
	c.wg.Add(1)
	go c.refreshLoop()
	return c
}

// Name is the server's name.
func (c *Conn) Name() string { return c.name }

// Disabled reports a server the config disables.
func (c *Conn) Disabled() bool { return c.cfg.Disabled }

// orDefault is v, or def when v is not set.
func orDefault(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// Snapshot returns the current catalog of this server.
func (c *Conn) Snapshot() *ServerSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshot
}

func (c *Conn) setSnapshot(s *ServerSnapshot) {
	c.mu.Lock()
	c.setSnapshotLocked(s)
	c.mu.Unlock()
	if c.onChange != nil {
		c.onChange(s)
	}
}

func (c *Conn) setSnapshotLocked(s *ServerSnapshot) {
	c.generation++
	s.Generation = c.generation
	c.snapshot = s
}

// nextListing numbers a listing that starts now.
func (c *Conn) nextListing() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listings++
	return c.listings
}

// installListing makes a listing's snapshot the current one, unless a
// listing that started later is installed already: listings overlap (a
// refresh on tools/list_changed, one a caller asked for), and the one that
// started first may hold older tools.
func (c *Conn) installListing(s *ServerSnapshot) {
	c.mu.Lock()
	if s.listing < c.installed {
		c.mu.Unlock()
		c.logger.Debug("an older listing finished after a newer one; kept the newer", "tools", len(s.Tools))
		return
	}
	// Checked and installed under one lock: another listing must not
	// come in between.
	c.installed = s.listing
	c.setSnapshotLocked(s)
	c.mu.Unlock()
	if c.onChange != nil {
		c.onChange(s)
	}
}

// Close stops the connection and its goroutines.
func (c *Conn) Close() {
	c.cancel()
	c.mu.Lock()
	cl, stop := c.client, c.stopListen
	c.client, c.wire, c.stopListen = nil, nil, nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	if cl != nil {
		_ = cl.Close()
	}
	c.wg.Wait()
}

// Connect establishes the connection (if needed) and lists tools. It honours
// the reconnect backoff: while a retry is not yet due it fails fast.
func (c *Conn) Connect(ctx context.Context) error {
	_, _, err := c.connect(ctx)
	return err
}

// connect is Connect, returning the live client and its wire seam.
func (c *Conn) connect(ctx context.Context) (*client.Client, *wireTransport, error) {
	if c.cfg.Disabled {
		return nil, nil, fmt.Errorf("server %s is disabled: %w", c.name, ErrServerUnavailable)
	}
	c.mu.Lock()
	for c.client == nil && c.dialing != nil {
		inFlight := c.dialing
		c.mu.Unlock()
		select {
		case <-inFlight:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("connect %s: %w", c.name, ctx.Err())
		}
		c.mu.Lock()
	}
	if c.client != nil {
		cl, w := c.client, c.wire
		c.mu.Unlock()
		return cl, w, nil
	}
	if wait := c.retryAt.Sub(c.now()); c.failures > 0 && wait > 0 {
		last := c.lastErr
		c.mu.Unlock()
		why := "the last attempt failed"
		if last != nil {
			why = last.Error()
		}
		err := fmt.Errorf("server %s: %w (%s); the next attempt in %s", c.name, ErrServerUnavailable, why, wait.Round(time.Millisecond))
		return nil, nil, &withCause{err: err, cause: last}
	}
	done := make(chan struct{})
	c.dialing = done
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.dialing = nil
		c.mu.Unlock()
		close(done)
	}()

	timeout := c.cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cl, w, snap, err := c.dial(cctx)
	if err != nil {
		err = tidyError(err)
		c.mu.Lock()
		c.failures++
		c.retryAt = c.now().Add(backoff(c.failures))
		c.lastErr = err
		c.mu.Unlock()
		c.setSnapshot(c.Snapshot().failed(err.Error()))
		return nil, nil, fmt.Errorf("connect %s: %w: %w", c.name, ErrServerUnavailable, err)
	}
	c.mu.Lock()
	c.failures = 0
	reconnect := c.connectedOnce
	c.connectedOnce = true
	c.mu.Unlock()
	if reconnect && c.onReconnect != nil {
		c.onReconnect()
	}
	// The listing is installed before the client is published: a
	// concurrent connect returns as soon as it sees the client, and its
	// caller (a session building its view) must find the tools there.
	c.installListing(snap)
	c.mu.Lock()
	if c.life.Err() != nil {
		c.mu.Unlock()
		_ = cl.Close()
		return nil, nil, fmt.Errorf("server %s: host is shutting down: %w", c.name, ErrServerUnavailable)
	}
	c.client, c.wire = cl, w
	c.mu.Unlock()
	c.listenForChanges(cl)
	return cl, w, nil
}

// tidyError keeps err for errors.Is/As but makes its message one readable
// line: a segment repeated right after itself is dropped (mcp-go wraps
// some failures twice: "failed to send request: failed to send request:
// Post ..."), an HTML error page a server answered with is left out (only
// its status stays), white space runs become one space, and the message
// is cut at maxErrorText bytes.
func tidyError(err error) error {
	msg := err.Error()
	parts := strings.Split(msg, ": ")
	kept := parts[:1]
	for _, p := range parts[1:] {
		if p != kept[len(kept)-1] {
			kept = append(kept, p)
		}
	}
	tidy := strings.Join(kept, ": ")
	if i := htmlStart(tidy); i >= 0 {
		tidy = strings.TrimRight(tidy[:i], " :\n\t") + " (an HTML page, left out)"
	}
	tidy = strings.Join(strings.Fields(tidy), " ")
	if len(tidy) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(tidy[cut]) {
			cut--
		}
		tidy = tidy[:cut] + "…"
	}
	if tidy == msg {
		return err
	}
	return &tidiedError{msg: tidy, err: err}
}

// maxErrorText bounds a connection error's message (a server's error body
// can be anything).
const maxErrorText = 400

// htmlStart is where an HTML document starts in msg, or -1.
func htmlStart(msg string) int {
	lower := strings.ToLower(msg)
	for _, tag := range []string{"<!doctype html", "<html"} {
		if i := strings.Index(lower, tag); i >= 0 {
			return i
		}
	}
	return -1
}

// withCause is err, with cause (the failure that started a backoff) in its
// chain but not in its message: callers can still tell, for example, that
// the server wants authorization.
type withCause struct {
	err, cause error
}

func (e *withCause) Error() string { return e.err.Error() }
func (e *withCause) Unwrap() []error {
	if e.cause == nil {
		return []error{e.err}
	}
	return []error{e.err, e.cause}
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
func (c *Conn) withStderr(err error, inner transport.Interface) error {
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
func (c *Conn) dial(ctx context.Context) (*client.Client, *wireTransport, *ServerSnapshot, error) {
	// Only the host's own transports read through guards that report
	// protocol failures; requests on one handed in are not tracked.
	var pending *pendingRequests
	if c.transport == nil {
		pending = &pendingRequests{}
	}
	requests := newServerRequests(c.logger)
	inner, err := c.newTransport(pending, requests)
	if err != nil {
		return nil, nil, nil, err
	}
	var opts []client.ClientOption
	extensions := c.extensionIDs()
	if c.TasksOn() {
		// Declared on every request of a 2026-07-28 connection (mcp-go
		// sends the capabilities in each request's _meta): a server may
		// answer any tools/call with a task handle then.
		extensions = append(slices.Clip(extensions), config.TasksExtension)
	}
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
		opts = append(opts, client.WithElicitationHandler(exchangeFreeElicitation{c.elicitation}))
	}
	seam, w := newWire(inner, pending, requests)
	cl := client.NewClient(seam, opts...)
	// The transport lives as long as the connection, not the dial deadline:
	// a stdio transport keeps the context it was started with.
	if err := cl.Start(c.life); err != nil {
		_ = cl.Close()
		return nil, nil, nil, c.withStderr(fmt.Errorf("start transport: %w", err), inner)
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
		return nil, nil, nil, c.withStderr(fmt.Errorf("initialize: %w", err), inner)
	}
	negotiated := cl.ProtocolVersion()
	if pinned := c.cfg.ProtocolVersion; pinned == config.ProtocolModern && negotiated != pinned {
		return nil, nil, nil, fmt.Errorf("protocol version pinned to %s but the server speaks %s", pinned, negotiated)
	}
	snap, err := c.list(ctx, cl, w)
	if err != nil {
		return nil, nil, nil, err
	}
	ok = true
	return cl, w, snap, nil
}

// extensionIDs are the secure-params extension ids to declare. SEP-3221
// makes binding opt-in: declared only for servers with bindings configured.
func (c *Conn) extensionIDs() []string {
	if !c.declareSecure {
		return nil
	}
	if len(c.cfg.SecureParams.Extensions) == 0 {
		return []string{config.DefaultSecureParamsExtension}
	}
	return c.cfg.SecureParams.Extensions
}

// negotiatedExtension is the first of our extension ids the server advertised.
func (c *Conn) negotiatedExtension(cl *client.Client) string {
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
func (c *Conn) list(ctx context.Context, cl *client.Client, w *wireTransport) (*ServerSnapshot, error) {
	seq := c.nextListing()
	var listed []secureparams.ListedTool
	seen := map[string]bool{}
	cursor := mcp.Cursor("")
	for page := 0; ; page++ {
		if page >= maxListPages {
			return nil, fmt.Errorf("tools/list: more than %d pages", maxListPages)
		}
		req := mcp.ListToolsRequest{}
		req.Params.Cursor = cursor
		x := &exchange{method: string(mcp.MethodToolsList)}
		_, err := cl.ListToolsByPage(x.bind(ctx), req)
		raw := x.result
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
			// Parsed definitions share the page's bytes for as long as
			// they live (secureparams.ParseTool); mcp-go's own transports
			// decode each response into fresh memory, a transport handed
			// in may reuse its buffer for the next one.
			raw = bytes.Clone(raw)
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
	snap.listing = seq
	snap.Warnings = append(snap.Warnings, c.secureWarnings(cl, ext)...)
	if c.undeclaredExtension(cl) != "" {
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
// names the server); "" otherwise. The ids looked for are the configured
// ones and the known ones (config.KnownSecureParamsExtensions): a Toolbox
// server hides its tools that take secure values from a client that does
// not declare its id, so they would vanish without a word.
func (c *Conn) undeclaredExtension(cl *client.Client) string {
	if c.declareSecure {
		return ""
	}
	return advertisedOf(cl, c.secureIDsKnown())
}

// secureIDsKnown are the configured extension ids, then the known ones.
func (c *Conn) secureIDsKnown() []string {
	ids := slices.Clone(c.cfg.SecureParams.Extensions)
	if len(ids) == 0 {
		ids = []string{config.DefaultSecureParamsExtension}
	}
	for _, id := range config.KnownSecureParamsExtensions {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// advertisedOf is the first of ids the server advertises, "" for none.
func advertisedOf(cl *client.Client, ids []string) string {
	advertised := cl.GetServerCapabilities().Extensions
	for _, id := range ids {
		if _, ok := advertised[id]; ok {
			return id
		}
	}
	return ""
}

// secureWarnings are the operator warnings about the secure-params
// extension of a listing: an id the server advertises that the host does
// not declare, and Toolbox's on a connection older than 2026-07-28, where
// Toolbox offers no tool that takes secure values.
func (c *Conn) secureWarnings(cl *client.Client, negotiated string) []string {
	var out []string
	configured := c.cfg.SecureParams.Extensions
	if len(configured) == 0 {
		configured = []string{config.DefaultSecureParamsExtension}
	}
	if id := c.undeclaredExtension(cl); id != "" {
		w := fmt.Sprintf("the server supports secure parameters (%s), but no binding names server %q, "+
			"so agenthost did not declare the extension and the server's tools that take secure values are not offered; "+
			"add a bindings entry for the server (docs/config.md)", id, c.name)
		if !slices.Contains(configured, id) {
			w += fmt.Sprintf(" and add %s to mcpServers.%s.secureParams.extensions", id, c.name)
		}
		out = append(out, w)
	} else if c.declareSecure && negotiated == "" {
		if id := advertisedOf(cl, c.secureIDsKnown()); id != "" && !slices.Contains(configured, id) {
			out = append(out, fmt.Sprintf("the server supports secure parameters as %s, which agenthost does not declare to it "+
				"(mcpServers.%s.secureParams.extensions is %s), so the server's tools that take secure values are not offered; "+
				"add %s to that list (docs/config.md)", id, c.name, strings.Join(configured, ", "), id))
		}
	}
	if id := advertisedOf(cl, []string{config.ToolboxSecureParamsExtension}); id != "" && !mcp.IsModernProtocol(cl.ProtocolVersion()) {
		out = append(out, fmt.Sprintf("the server advertises %s, which offers tools that take secure values only on protocol %s; "+
			"this connection speaks %s, so those tools are not listed (set mcpServers.%s.protocolVersion to auto or %s)",
			id, config.ProtocolModern, cl.ProtocolVersion(), c.name, config.ProtocolModern))
	}
	return out
}

// Refresh re-lists tools on the live connection, connecting first when
// there is none.
func (c *Conn) Refresh(ctx context.Context) error {
	c.mu.Lock()
	cl, w := c.client, c.wire
	c.mu.Unlock()
	if cl == nil {
		return c.Connect(ctx)
	}
	snap, err := c.list(ctx, cl, w)
	if err != nil {
		return fmt.Errorf("refresh %s: %w", c.name, err)
	}
	c.logger.Debug("refreshed", "tools", len(snap.Tools))
	c.installListing(snap)
	return nil
}

// RequestRefresh asks the refresh loop to re-list; bursts coalesce.
func (c *Conn) RequestRefresh() {
	select {
	case c.refreshCh <- struct{}{}:
	default:
	}
}

func (c *Conn) refreshLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.refreshCh:
			ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
			if err := c.Refresh(ctx); err != nil && c.life.Err() == nil {
				c.logger.Warn("tool list refresh failed", "err", err)
			}
			cancel()
		}
	}
}

// listenForChanges wires tools/list_changed to a refresh. Legacy connections
// deliver notifications on the transport; modern ones need an opt-in
// subscriptions/listen stream.
func (c *Conn) listenForChanges(cl *client.Client) {
	acked := make(chan struct{})
	var ackOnce sync.Once
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		c.logger.Debug("notification", "method", n.Method)
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged:
			c.RequestRefresh()
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			ackOnce.Do(func() { close(acked) })
			c.taskWatches.deliver(n.Method, n.Params.AdditionalFields)
		case methodTasksNotification:
			c.taskWatches.deliver(n.Method, n.Params.AdditionalFields)
		case string(mcp.MethodNotificationProgress):
			c.progress.deliver(n.Params.AdditionalFields)
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
func (c *Conn) dropClient(cl *client.Client, cause error) {
	c.mu.Lock()
	if c.client != cl {
		c.mu.Unlock()
		return
	}
	c.client, c.wire = nil, nil
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
	// An authorization failure concerns one request's subject, not the
	// connection that other sessions share.
	if errors.Is(err, ErrProtocol) || isAuthorizationFailure(err) {
		return false
	}
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

// isAuthorizationFailure reports the failed authorization of one request
// (host.AuthorizationFailure, which an Authorizer's transport returns).
func isAuthorizationFailure(err error) bool {
	f, ok := errors.AsType[interface {
		error
		IsAuthorizationFailure() bool
	}](err)
	return ok && f.IsAuthorizationFailure()
}

// newTransport builds the inner mcp-go transport for the server's config.
// Its reads are bounded by limits.maxResponseBytes, and messages that are
// not JSON-RPC fail the requests in pending.
func (c *Conn) newTransport(pending *pendingRequests, requests *serverRequests) (transport.Interface, error) {
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
		return newStdioProcess(c, c.maxResponseBytes, pending.failAll, requests), nil
	case config.TransportHTTP:
		return transport.NewStreamableHTTP(c.cfg.URL,
			transport.WithHTTPHeaders(c.cfg.Headers),
			transport.WithHTTPLogger(slog.New(quietListening{c.logger.Handler()})),
			transport.WithHTTPBasicClient(c.httpClient(pending.failAll, requests)),
			// The GET stream of the 2025-11-25 era (see legacyhttp.go).
			//lint:ignore SA1019 deprecated for the 2026-07-28 era only, where mcp-go leaves it closed
			transport.WithContinuousListening(),
		)
	case config.TransportSSE:
		return transport.NewSSE(c.cfg.URL,
			transport.WithHeaders(c.cfg.Headers),
			transport.WithSSELogger(c.logger),
			transport.WithHTTPClient(c.httpClient(pending.failAll, requests)),
		)
	default:
		return nil, fmt.Errorf("unknown transport type %q", c.cfg.Type)
	}
}

// httpClient is the client of one HTTP server connection. Go's default
// keeps two idle connections per host: with many sessions calling one
// server at once, almost every call would open (and leave in TIME_WAIT) a
// new TCP connection. No overall timeout: responses may stream; calls are
// bounded by their context (callTimeout). Redirects follow the one
// policy (internal/httpredirect): within the configured URL's origin,
// with every hop admitted; the configured headers go nowhere else.
// requests bounds what the server asks of the host in its answers.
func (c *Conn) httpClient(failAll func(*ProtocolError), requests *serverRequests) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Requests beyond MaxConnsPerHost wait for a free connection instead of
	// dialing (and later closing) one each: under a burst of sessions that
	// is both faster and kinder to the server.
	t.MaxConnsPerHost = 64
	t.MaxIdleConnsPerHost = 64
	t.MaxIdleConns = 256
	var base http.RoundTripper = t
	if c.wrapHTTP != nil {
		base = c.wrapHTTP(t)
	}
	return httpredirect.NewClient(&limitedTransport{base: base, max: c.maxResponseBytes, failAll: failAll, requests: requests}, c.redirects)
}

// command builds the stdio child with an explicit environment: only the
// configured env plus a few basics (childproc.Env). The host's own
// environment (API keys, plugin secrets) never leaks into servers. The
// server leads a session of its own so that its whole tree can be ended;
// with a supervisor, the supervisor leads it and ends the tree even when
// the host is SIGKILLed. The file that runs is the one the command names
// by childproc.LookPath's rule (relative to cwd, a bare name in PATH);
// under a managed allowlist the file admit returns, checked at this start
// (argv[0] stays the command as written).
func (c *Conn) command(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
	path, err := childproc.LookPath(command, c.cfg.Cwd)
	switch {
	case c.admit != nil && err != nil:
		return nil, fmt.Errorf("failed to start command: %w", err)
	case c.admit != nil:
		if path, err = c.admit(path); err != nil {
			return nil, err
		}
	case err != nil:
		path = command // exec reports it, by the name configured
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = command
	cmd.Env = childproc.Env(os.Getenv, c.cfg.Env)
	cmd.Dir = c.cfg.Cwd
	if c.sandbox.Enforced() {
		return cmd, c.sandboxed(cmd)
	}
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

// NewLineLogger is a writer that logs each line written to it at debug
// level, as msg with the line in "line" (a plugin's log output, say).
func NewLineLogger(logger *slog.Logger, msg string) io.Writer {
	return &lineLogger{logger: logger, msg: msg}
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
