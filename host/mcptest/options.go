package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// SecureParamsExtension is the SEP-3221 extension id advertised by default.
const SecureParamsExtension = wire.SecureParamsExtension

// Eras the server can accept.
const (
	EraLegacy = "legacy" // 2025-11-25 and older: initialize handshake
	EraModern = "modern" // 2026-07-28: server/discover, per-request _meta
)

// ErrorStatus modes: which HTTP status carries a JSON-RPC error response.
const (
	// ErrorStatusSEP maps every error in the modern era as mcp-go's server
	// does (-32601 -> 404; -32602, -32021, -32020, -32022, -32600, -32700 ->
	// 400) and also applies the SEP-3221 section 7 table (-32601 -> 404,
	// -32602/-32021 -> 400) to tools/call errors in the legacy era.
	ErrorStatusSEP = "sep"
	// ErrorStatusModern maps in the modern era only, exactly like mcp-go's
	// server; legacy-era errors are HTTP 200.
	ErrorStatusModern = "modern"
	// ErrorStatus200 answers every JSON-RPC error with HTTP 200 (Toolbox).
	ErrorStatus200 = "200"
)

// Malformed page kinds for Options.MalformedKind.
const (
	MalformedNotObject    = "not-object"    // first tool of the page is a JSON string
	MalformedNoName       = "no-name"       // first tool of the page lacks "name"
	MalformedSchemaString = "schema-string" // first tool's inputSchema is a string
	MalformedGarbage      = "garbage"       // the response is not JSON at all
)

// Options configure a Server. The zero value serves no tools over both eras
// with the secure-params extension advertised.
type Options struct {
	// ToolsFile is a JSON file: an array of tools, or {"tools": [...]} whose
	// entries are tools or fixture entries {"id","expect","tool"}.
	ToolsFile string
	// ToolsJSON is used when ToolsFile is empty (same format). Relative
	// listChanged paths then resolve against the working directory.
	ToolsJSON []byte

	// Transport ("stdio" or "http"), Addr and AddrFile are used by Main only.
	Transport string
	Addr      string
	AddrFile  string
	// Path is the streamable HTTP endpoint; default "/mcp".
	Path string

	// Eras lists the accepted eras (EraLegacy, EraModern); default both.
	Eras []string
	// Extensions are the extension ids advertised and accepted. nil means
	// SecureParamsExtension; a list containing "none" advertises nothing.
	Extensions []string
	// NullExtensions advertises each of Extensions as null rather than as
	// an object (a malformed advertisement, which must not negotiate).
	NullExtensions bool

	// RecordFile, when set, gets one JSON line per received message.
	RecordFile string
	// RecordSent also writes sent messages to RecordFile ("dir":"out").
	RecordSent bool

	// PageSize > 0 paginates tools/list with opaque cursors.
	PageSize int
	// Name and Version identify the server; defaults "mcptestserver", "1.0.0".
	Name    string
	Version string

	// Toolbox serves secure parameters as Google's MCP Toolbox specifies
	// them (id com.google.cloud/toolbox.v1): a tool with a
	// secureInputSchema is listed only to a 2026-07-28 client that
	// declares an advertised extension, and called over an older protocol
	// it does not exist (-32602); every secure parameter is required (one
	// missing is a tool error); a name secureInputSchema does not declare
	// in secureArguments is -32602.
	Toolbox bool

	// UnknownToolCode answers tools/call of an unknown tool: CodeMethodNotFound
	// (default, SEP table) or CodeInvalidParams (Toolbox wording).
	UnknownToolCode int
	// ErrorStatus is one of ErrorStatusSEP (default), ErrorStatusModern,
	// ErrorStatus200.
	ErrorStatus string

	// MalformedList makes tools/list return {"tools": <an object>}.
	MalformedList bool
	// MalformedPage (1-based) corrupts that tools/list page as MalformedKind.
	MalformedPage int
	MalformedKind string

	// NestedList > 0 answers tools/list with one tool whose inputSchema
	// nests that many arrays (beyond encoding/json's limit of 10000, the
	// response cannot be decoded).
	NestedList int

	// DieAfter > 0 answers that many requests, then dies on the next one.
	DieAfter int
	// StartDelay sleeps before serving stdio or listening on HTTP.
	StartDelay time.Duration
	// StderrNoise writes chatter lines to Stderr at start and per request.
	StderrNoise bool
	// OAuth protects the HTTP endpoint with an in-process OAuth
	// authorization server (host/oauth/oauthtest): every request needs its
	// Bearer token; the server approves every authorization at once.
	OAuth bool
	// OAuthDPoP makes that authorization server and the endpoint
	// DPoP-capable, both demanding a nonce (oauthtest's DPoP and
	// DPoPNonce).
	OAuthDPoP bool
	// OAuthAssertion is a workload assertion the authorization server
	// accepts with the JWT bearer grant (oauthtest's Assertions).
	OAuthAssertion string
	// Stderr receives noise; default io.Discard.
	Stderr io.Writer

	// Handler, when set, executes validated calls in place of the x-test
	// result behaviours (faults still apply first). It is how a real tool
	// implementation (the demo's SQL server) rides on this server's SEP-3221
	// layer. arguments and secureArguments arrive as raw JSON values.
	Handler func(ctx context.Context, tool string, args, secureArgs map[string]json.RawMessage) (text string, isError bool)
}

func (o *Options) applyDefaults() {
	if o.Path == "" {
		o.Path = "/mcp"
	}
	if len(o.Eras) == 0 {
		o.Eras = []string{EraLegacy, EraModern}
	}
	if o.Extensions == nil {
		o.Extensions = []string{SecureParamsExtension}
	}
	if slices.Contains(o.Extensions, "none") {
		o.Extensions = []string{}
	}
	if o.Name == "" {
		o.Name = "mcptestserver"
	}
	if o.Version == "" {
		o.Version = "1.0.0"
	}
	if o.UnknownToolCode == 0 {
		o.UnknownToolCode = CodeMethodNotFound
	}
	if o.ErrorStatus == "" {
		o.ErrorStatus = ErrorStatusSEP
	}
	if o.MalformedKind == "" {
		o.MalformedKind = MalformedNotObject
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Transport == "" {
		o.Transport = "stdio"
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
}

func (o *Options) validate() error {
	var errs []error
	for _, era := range o.Eras {
		if era != EraLegacy && era != EraModern {
			errs = append(errs, fmt.Errorf("unknown era %q (want %q or %q)", era, EraLegacy, EraModern))
		}
	}
	if o.UnknownToolCode != CodeMethodNotFound && o.UnknownToolCode != CodeInvalidParams {
		errs = append(errs, fmt.Errorf("unknown-tool-code must be %d or %d, got %d", CodeMethodNotFound, CodeInvalidParams, o.UnknownToolCode))
	}
	if !slices.Contains([]string{ErrorStatusSEP, ErrorStatusModern, ErrorStatus200}, o.ErrorStatus) {
		errs = append(errs, fmt.Errorf("error-status must be sep, modern or 200, got %q", o.ErrorStatus))
	}
	if !slices.Contains([]string{MalformedNotObject, MalformedNoName, MalformedSchemaString, MalformedGarbage}, o.MalformedKind) {
		errs = append(errs, fmt.Errorf("unknown malformed-kind %q", o.MalformedKind))
	}
	if o.Transport != "stdio" && o.Transport != "http" {
		errs = append(errs, fmt.Errorf("transport must be stdio or http, got %q", o.Transport))
	}
	if o.PageSize < 0 || o.DieAfter < 0 || o.MalformedPage < 0 || o.StartDelay < 0 {
		errs = append(errs, errors.New("page-size, die-after, malformed-page and start-delay must not be negative"))
	}
	if !strings.HasPrefix(o.Path, "/") {
		errs = append(errs, fmt.Errorf("path must start with /, got %q", o.Path))
	}
	return errors.Join(errs...)
}

func (o *Options) accepts(era string) bool { return slices.Contains(o.Eras, era) }

// listFlag collects a repeatable or comma-separated string flag.
type listFlag struct {
	values *[]string
	set    bool
}

func (l *listFlag) String() string {
	if l.values == nil {
		return ""
	}
	return strings.Join(*l.values, ",")
}

func (l *listFlag) Set(v string) error {
	if !l.set {
		*l.values = nil // the first use replaces the default
		l.set = true
	}
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l.values = append(*l.values, part)
		}
	}
	return nil
}

// ParseFlags parses the binary's command line into Options.
func ParseFlags(args []string, output io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("agenthost-testserver", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&o.ToolsFile, "tools", "", "tools JSON file")
	example := fs.Bool("example", false, "serve the example tools (ExampleTools: whoami, delete_item) instead of a --tools file")
	fs.StringVar(&o.Transport, "transport", "stdio", "stdio or http")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:0", "HTTP listen address")
	fs.StringVar(&o.AddrFile, "addr-file", "", "write the HTTP URL here instead of printing LISTENING on stdout")
	fs.StringVar(&o.Path, "path", "/mcp", "HTTP endpoint path")
	o.Eras = []string{EraLegacy, EraModern}
	fs.Var(&listFlag{values: &o.Eras}, "eras", "accepted eras: legacy,modern")
	o.Extensions = []string{SecureParamsExtension}
	fs.Var(&listFlag{values: &o.Extensions}, "extension", "advertised extension id (repeatable; none for no extension)")
	fs.StringVar(&o.RecordFile, "record", "", "append received messages as JSON lines")
	fs.BoolVar(&o.RecordSent, "record-sent", false, "also record sent messages")
	fs.IntVar(&o.PageSize, "page-size", 0, "tools/list page size (0: no pagination)")
	fs.StringVar(&o.Name, "name", "mcptestserver", "server name")
	fs.StringVar(&o.Version, "version", "1.0.0", "server version")
	fs.BoolVar(&o.Toolbox, "toolbox", false, "serve secure parameters as Google's MCP Toolbox does (see Options.Toolbox)")
	fs.IntVar(&o.UnknownToolCode, "unknown-tool-code", CodeMethodNotFound, "error code for an unknown tool: -32601 or -32602")
	fs.StringVar(&o.ErrorStatus, "error-status", ErrorStatusSEP, "HTTP status for JSON-RPC errors: sep, modern or 200")
	errors200 := fs.Bool("errors-http-200", false, "same as --error-status 200")
	fs.BoolVar(&o.MalformedList, "malformed-list", false, "tools/list returns a non-array tools field")
	fs.IntVar(&o.MalformedPage, "malformed-page", 0, "corrupt this tools/list page (1-based)")
	fs.StringVar(&o.MalformedKind, "malformed-kind", MalformedNotObject, "not-object, no-name, schema-string or garbage")
	fs.IntVar(&o.NestedList, "nested-list", 0, "answer tools/list with a schema nested this many arrays deep")
	fs.IntVar(&o.DieAfter, "die-after", 0, "answer N requests, then exit(3) on the next")
	fs.DurationVar(&o.StartDelay, "start-delay", 0, "sleep before serving")
	fs.BoolVar(&o.StderrNoise, "stderr-noise", false, "write chatter to stderr")
	fs.BoolVar(&o.OAuth, "oauth", false, "http: require OAuth tokens from an in-process authorization server")
	fs.BoolVar(&o.OAuthDPoP, "oauth-dpop", false, "with --oauth: DPoP-bound tokens, both servers demanding a nonce")
	fs.StringVar(&o.OAuthAssertion, "oauth-assertion", "", "with --oauth: a workload assertion the JWT bearer grant accepts")
	if err := fs.Parse(args); err != nil {
		return Options{}, fmt.Errorf("parsing flags: %w", err)
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *errors200 {
		o.ErrorStatus = ErrorStatus200
	}
	if *example {
		if o.ToolsFile != "" {
			return Options{}, errors.New("--example and --tools are exclusive")
		}
		o.ToolsJSON = []byte(ExampleTools)
	}
	return o, nil
}

// ExampleTools is the tool set of --example, for trying agenthost (a
// credential plugin, a binding, an approval rule) against a server with
// secure parameters: both tools take the secure parameter "token" and
// declare their risk. whoami (read, low) answers with the secure arguments
// it received, values included, so that what a binding or plugin supplied
// can be seen (agenthost masks a secret value in what it shows; the
// --record file keeps it); delete_item (delete, high) is one an approval
// rule would ask for.
const ExampleTools = `[
 {"name": "whoami", "description": "Answers with the secure arguments it received, values included.",
  "inputSchema": {"type": "object"},
  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1},
  "x-test": {"echoSecure": true}},
 {"name": "delete_item", "description": "Deletes the item with the given id (it only says so).",
  "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 1},
  "x-test": {"text": "deleted"}}
]`
