package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/stores"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/internal/childproc"
)

// app holds the CLI's flags and the objects a command builds.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	configPath string
	logLevel   string
	// reportsServers is set by commands that print each server's error
	// themselves (servers, tools, call): unless --log-level was given, their
	// logs start at error, so that no error is printed twice.
	reportsServers bool
	logLevelSet    bool

	// session flags
	binds     []string
	trust     int
	approve   string
	sessionID string
	subject   string

	// headless holds run's Claude Code flags.
	headless headlessFlags

	redactor *bindings.Redactor
	host     *host.Host
	// durable runs run's turns durably and keeps its sessions (nil: in
	// memory, --no-save, and every other command).
	durable *durable.Engine
	// auditAlso also receives every audit record (serve's index).
	auditAlso auditlog.Sink
	// replElicitation asks servers' questions on the terminal; set for the
	// REPL only.
	replElicitation host.ElicitationFunc

	// The REPL's terminal program, the options of its approval question,
	// its session and its saved answers "always" (run on a terminal only).
	replUI         *replUI
	replPromptOpts terminal.PromptOptions
	replSession    *host.Session
	replLocal      *localAlways

	interruptMu sync.Mutex
	interrupt   func()

	// input is the one reader of stdin's lines, shared by the REPL, the
	// approval prompt and elicitation questions (terminalInput).
	input *terminal.Input
}

// terminalInput is the shared reader of stdin's lines: whoever asks
// (the REPL, an open approval question, a server's question) gets the next
// line, and a question interrupted by Ctrl-C leaves it to the next asker.
func (a *app) terminalInput() *terminal.Input {
	if a.input == nil {
		a.input = terminal.NewInput(a.stdin)
	}
	return a.input
}

// setInterrupt installs what Ctrl-C does while a REPL turn runs (nil: none).
func (a *app) setInterrupt(f func()) {
	a.interruptMu.Lock()
	defer a.interruptMu.Unlock()
	a.interrupt = f
}

// interruptTurn ends the running REPL turn, reporting whether there was one.
func (a *app) interruptTurn() bool {
	a.interruptMu.Lock()
	defer a.interruptMu.Unlock()
	if a.interrupt == nil {
		return false
	}
	a.interrupt()
	a.interrupt = nil
	return true
}

func (a *app) close() {
	if a.host != nil {
		closeWithin(a.stderr, closeTimeout, a.host.Close)
	}
	if a.durable != nil {
		closeWithin(a.stderr, closeTimeout, a.durable.Close)
	}
	if a.input != nil {
		_ = a.input.Close()
	}
}

// closeTimeout bounds the host's shutdown at exit. Closing a stdio server
// takes at most a few seconds (stdin closed, SIGTERM, SIGKILL, then its
// process tree); past this the CLI exits anyway, and the child supervisor
// ends what is left when this process is gone.
const closeTimeout = 10 * time.Second

// closeWithin runs closeFn, waiting at most d for it to return.
func closeWithin(stderr io.Writer, d time.Duration, closeFn func() error) {
	done := make(chan struct{})
	go func() {
		_ = closeFn()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		fmt.Fprintf(stderr, "agenthost: shutting down took longer than %s; exiting without waiting for the servers to stop\n", d)
	}
}

// redact masks every secure value resolved so far.
func (a *app) redact(s string) string {
	if a.redactor == nil {
		return s
	}
	return a.redactor.Redact(s)
}

func (a *app) addSessionFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&a.binds, "bind", nil, "session value NAME=VALUE, used by bindings of kind session (repeatable)")
	f.IntVar(&a.trust, "trust", 0, "session trust level 1..5 (default from config, else 1)")
	f.StringVar(&a.approve, "approve", "", "how asks are answered: prompt, deny, auto or wait (votes from anywhere through approvals.store); default prompt on a terminal, else deny")
	f.StringVar(&a.sessionID, "session-id", "", "session id passed to credential sources and audit")
	f.StringVar(&a.subject, "subject", "", "the user or tenant the session acts for")
}

func (a *app) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return nil, usageErr(fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", a.logLevel))
	}
	if a.reportsServers && !a.logLevelSet {
		level = max(level, slog.LevelError)
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level})), nil
}

// loadConfig reads --config (or the default locations).
func (a *app) loadConfig() (*config.Config, error) {
	cfg, err := config.LoadDefault(a.configPath)
	if err == nil {
		err = cfg.CheckSources() // the CLI supplies no source of its own
	}
	if err != nil {
		return nil, &exitErr{code: exitUsage, err: err}
	}
	if cfg.File == "" {
		fmt.Fprintf(a.stderr, "agenthost: no config file found (searched %s); running with no servers. Pass --config FILE; docs/config.md describes the file.\n",
			strings.Join(config.DefaultPaths(), ", "))
	}
	return cfg, nil
}

// loadConfigWith loads the config and checks that a server named on the
// command line (if any) is configured; flag names it for the message.
func (a *app) loadConfigWith(server, flag string) (*config.Config, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	if server != "" {
		if _, ok := cfg.MCPServers[server]; !ok {
			return nil, usageErr(fmt.Errorf("%sno server named %q in the config", flag, server))
		}
	}
	return cfg, nil
}

// newHost builds the host for cfg; the app closes it at exit.
func (a *app) newHost(cfg *config.Config) (*host.Host, error) {
	logger, err := a.logger()
	if err != nil {
		return nil, err
	}
	a.redactor = bindings.NewRedactor()
	store, err := a.tokenStore()
	if err != nil {
		return nil, err
	}
	chainKey, err := host.AuditChainKey(cfg, nil)
	if err != nil {
		return nil, &exitErr{code: exitUsage, err: err}
	}
	// Telemetry is set up only when the observability section or an
	// OTEL_EXPORTER_OTLP_*ENDPOINT variable turns it on (docs/config.md).
	opts := compose.Options{Host: host.Options{Logger: logger, Redactor: a.redactor, Elicitation: a.elicitation(),
		ChildSupervisor: childproc.Self(), AuditAlso: a.auditAlso},
		Databases: stores.Databases{ChainKey: chainKey}, Telemetry: true,
		OAuth: compose.OAuthOptions{Store: store, Subject: a.subject, Login: a.oauthLogin}}
	if a.durable != nil {
		opts.Host.Durability = a.durable
	}
	h, err := compose.New(context.Background(), cfg, opts)
	if err != nil {
		// The host names the key (sources.vault.sha256, audit.path); the
		// message names the file too (docs/config.md).
		if cfg.File != "" && host.KindOf(err) == host.KindConfig {
			err = fmt.Errorf("%s: %w", cfg.File, err)
		}
		return nil, &exitErr{code: exitUsage, err: err}
	}
	a.host = h
	return h, nil
}

// elicitation answers servers' requests for user input (multi-round-trip
// input rounds, elicitation/create) as --approve answers asks: auto accepts,
// filling in the requested schema's defaults, so that scripted calls of tools
// that ask for confirmation can complete; otherwise nil declines them.
func (a *app) elicitation() host.ElicitationFunc {
	if a.replElicitation != nil {
		return a.replElicitation
	}
	if a.approve != "auto" {
		return nil
	}
	return func(_ context.Context, _ string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action:  mcp.ElicitationResponseActionAccept,
			Content: schemaDefaults(req.Params.RequestedSchema),
		}}, nil
	}
}

// schemaDefaults is an object holding the default of every top-level
// property of a requested schema that declares one.
func schemaDefaults(schema any) map[string]any {
	content := map[string]any{}
	raw, err := json.Marshal(schema)
	if err != nil {
		return content
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return content
	}
	for name, p := range s.Properties {
		// A null default is none: null is no value of the primitive
		// types an elicitation asks for.
		if len(p.Default) > 0 && string(p.Default) != "null" {
			content[name] = p.Default
		}
	}
	return content
}

// newSession opens the session described by the session flags.
func (a *app) newSession(h *host.Host) (*host.Session, error) {
	values, err := bindings.ParseBinds(a.binds)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--bind: %w", err))
	}
	if a.trust != 0 && !risk.ValidTrustLevel(a.trust) {
		return nil, usageErr(fmt.Errorf("--trust: %d is not in %d..%d", a.trust, risk.MinTrust, risk.MaxTrust))
	}
	switch a.approve {
	case "", "prompt", "deny", "auto", "wait":
	default:
		return nil, usageErr(fmt.Errorf("--approve: %q is not one of prompt, deny, auto, wait", a.approve))
	}
	approver := a.approver()
	if a.approve == "wait" {
		if approver, err = a.waitApprover(h); err != nil {
			return nil, err
		}
	}
	return h.NewSession(host.SessionOptions{
		ID:         a.sessionID,
		Subject:    a.subject,
		TrustLevel: a.trust,
		Values:     values,
		Approver:   approver,
	}), nil
}

// approver answers asks per --approve: prompt on a terminal, deny otherwise.
func (a *app) approver() approvals.Approver {
	mode := a.approve
	if mode == "" {
		mode = "deny"
		if a.stdinIsTerminal() {
			mode = "prompt"
		}
	}
	switch mode {
	case "auto":
		return approvals.Auto{}
	case "prompt":
		id := os.Getenv("USER")
		if id == "" {
			id = "terminal"
		}
		if approvals.SameID(id, a.subject) {
			// The session's gate denies asks at once (a yes from the
			// requester cannot count); say so before anything is asked.
			fmt.Fprintf(a.stderr, "agenthost: warning: the prompt answers as %q, who is also the session's --subject: calls that need approval are denied without asking; "+
				"run with a --subject other than the approver, or have someone other than the subject approve\n", id)
		}
		if a.replUI != nil {
			return terminal.NewAskerPrompt(a.replUI, id, a.replPromptOpts)
		}
		return terminal.NewInputPrompt(a.terminalInput(), a.stderr, id)
	default:
		return approvals.Deny{}
	}
}

func usageErr(err error) error { return &exitErr{code: exitUsage, err: err} }

// exitCodeFor maps a host error kind to the CLI's exit code.
func exitCodeFor(kind host.Kind) int {
	switch kind {
	case host.KindDenied:
		return exitDenied
	case host.KindBinding:
		return exitBinding
	case host.KindToolError:
		return exitToolError
	case host.KindUnavailable:
		return exitUnavailable
	case host.KindConfig:
		return exitUsage
	case host.KindAuthorization:
		return exitAuthorization
	default:
		return exitError
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// errorJSON is the failure shape of `call --json`.
func errorJSON(kind host.Kind, message string) map[string]any {
	return map[string]any{"error": map[string]any{"kind": string(kind), "message": message}}
}
