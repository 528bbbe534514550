package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/answermode"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/ccstream"
)

// headlessFlags are the `run` flags of Claude Code's headless mode
// (docs/cli.md, "Headless, as Claude Code scripts expect").
type headlessFlags struct {
	model              string
	appendSystemPrompt string
	maxTurns           int
	permissionMode     string
	mcpConfigs         []string
	allowedTools       []string
	disallowedTools    []string
	inputFormat        string
	includePartial     bool
	verbose            bool

	prices map[string]config.Price
}

func (a *app) addHeadlessFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	h := &a.opts.Headless
	f.StringVar(&h.model, "model", "", "the model (overrides llm.model)")
	f.StringVar(&h.appendSystemPrompt, "append-system-prompt", "", "text appended to the system prompt")
	f.IntVar(&h.maxTurns, "max-turns", 0, "Claude Code's name of --max-steps")
	f.StringVar(&h.permissionMode, "permission-mode", "", "Claude Code's permission mode: default, acceptEdits (as default), plan or dontAsk (asks are denied), bypassPermissions (asks are approved; deny rules still deny)")
	f.StringArrayVar(&h.mcpConfigs, "mcp-config", nil, "an MCP configuration file (Claude Desktop's or Claude Code's mcpServers) whose servers are added (repeatable)")
	f.StringArrayVar(&h.allowedTools, "allowedTools", nil, "tools allowed without asking: mcp__SERVER__TOOL, mcp__SERVER (comma- or space-separated, repeatable); rules combine deny > ask > allow")
	f.StringArrayVar(&h.disallowedTools, "disallowedTools", nil, "tools denied: mcp__SERVER__TOOL, mcp__SERVER (comma- or space-separated, repeatable)")
	f.StringVar(&h.inputFormat, "input-format", "text", "text (the prompt) or stream-json (Claude Code's user messages, one JSON line each on stdin, one turn each)")
	f.BoolVar(&h.includePartial, "include-partial-messages", false, "with --output-format stream-json, stream the text as it arrives (stream_event lines)")
	f.BoolVar(&h.verbose, "verbose", false, "accepted for Claude Code's scripts (claude -p requires it with stream-json); no effect")
}

// applyHeadless applies the headless flags to the loaded configuration,
// --max-steps and the session flags.
func (a *app) applyHeadless(cfg *config.Config) error {
	maxSteps, format := &a.opts.MaxSteps, a.opts.Format
	h := &a.opts.Headless
	if h.model != "" {
		cfg.LLM.Model = h.model
	}
	if h.appendSystemPrompt != "" {
		cfg.LLM.SystemPrompt = strings.TrimSpace(cfg.LLM.SystemPrompt + "\n\n" + h.appendSystemPrompt)
	}
	if a.opts.MaxTurnsSet {
		if a.opts.MaxStepsSet && h.maxTurns != *maxSteps {
			return cmdutil.UsageErr(errors.New("--max-turns and --max-steps are the same setting: give one"))
		}
		if h.maxTurns < 1 {
			return cmdutil.UsageErr(errors.New("--max-turns: must be at least 1"))
		}
		*maxSteps = h.maxTurns
	}
	if h.permissionMode != "" {
		mode, err := answermode.FromPermissionMode(h.permissionMode)
		if err != nil {
			return cmdutil.UsageErr(fmt.Errorf("--permission-mode: %w", err))
		}
		if approve := string(mode); a.opts.Session.Approve != "" && a.opts.Session.Approve != approve {
			return cmdutil.UsageErr(fmt.Errorf("--permission-mode %s means --approve %s; give one of the two", h.permissionMode, orDefault(approve)))
		}
		a.opts.Session.Approve = string(mode)
	}
	switch h.inputFormat {
	case "text", "stream-json":
	default:
		return cmdutil.UsageErr(fmt.Errorf("--input-format: %q is not one of text, stream-json", h.inputFormat))
	}
	if h.includePartial && format != formatStreamJSON {
		return cmdutil.UsageErr(errors.New("--include-partial-messages needs --output-format stream-json"))
	}
	for _, file := range h.mcpConfigs {
		servers, err := config.LoadMCPServers(file)
		if err == nil {
			err = cfg.AddServers(file, servers)
		}
		if err != nil {
			return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: err}
		}
	}
	var lists config.PermissionLists
	for _, v := range h.allowedTools {
		lists.Allow = append(lists.Allow, config.SplitToolList(v)...)
	}
	for _, v := range h.disallowedTools {
		lists.Deny = append(lists.Deny, config.SplitToolList(v)...)
	}
	rules, ignored := config.PermissionRules("cli", lists)
	cfg.Approvals.Rules = append(cfg.Approvals.Rules, rules...)
	for _, p := range append(cfg.IgnoredPermissions, ignored...) {
		fmt.Fprintf(a.f.IO.ErrOut, "agenthost: warning: the permission pattern %q names no MCP tool (mcp__SERVER__TOOL); agenthost has only MCP tools, so it is ignored\n", cmdutil.Shown(a.f.IO.ErrOut, p))
	}
	if err := cfg.Validate(); err != nil {
		return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: err}
	}
	h.prices = cfg.LLM.Prices
	return nil
}

func orDefault(approve string) string {
	if approve == "" {
		return "(its default)"
	}
	return approve
}

// streamTurns is --input-format stream-json: one turn for each user
// message on stdin, until stdin ends or a turn does not end done.
func (a *app) streamTurns(ctx context.Context, sess *host.Session, format outputFormat, opts host.TurnOptions) error {
	sc := bufio.NewScanner(a.f.IO.In)
	sc.Buffer(make([]byte, 0, 64<<10), maxInputLine)
	turns := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		prompt, err := ccstream.ParseUserMessage([]byte(line))
		if err != nil {
			return cmdutil.UsageErr(fmt.Errorf("--input-format stream-json: line %d: %w", turns+1, err))
		}
		turns++
		end, lastErr := a.printTurn(ctx, sess, prompt, format, opts)
		if end.Reason != host.EndDone {
			return turnExit(end, lastErr)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if turns == 0 {
		return cmdutil.UsageErr(errors.New("--input-format stream-json: no user message on stdin"))
	}
	return nil
}

// maxInputLine bounds one stream-json line on stdin.
const maxInputLine = 16 << 20

// claudeStream is the writer of --output-format stream-json lines, or of
// json's result object, on w; nil for any other format.
func (a *app) claudeStream(w io.Writer, format outputFormat) *ccstream.Writer {
	if format != formatStreamJSON && format != formatJSON {
		return nil
	}
	cwd, _ := os.Getwd()
	mode := a.opts.Headless.permissionMode
	if mode == "" {
		mode = "default"
	}
	return ccstream.New(w, ccstream.Options{
		CWD:            cwd,
		PermissionMode: mode,
		Prices:         a.opts.Headless.prices,
		IncludePartial: a.opts.Headless.includePartial,
		ResultOnly:     format == formatJSON,
	})
}
