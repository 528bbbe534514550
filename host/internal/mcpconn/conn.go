package mcpconn

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/taskwire"
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
	taskWatches taskwire.Watches

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
