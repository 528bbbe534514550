package config

import (
	"os"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
)

// Config is the whole agenthost configuration after loading, ${VAR}
// expansion and validation. Map keys that name things chosen by the user
// (server names, env var names, header names, parameter names, source names)
// keep their case exactly as written in the file.
type Config struct {
	// File is the path the config was read from: "" when it was built in
	// code, or when LoadDefault found no file (an empty, valid config).
	File string `json:"-" yaml:"-"`

	LLM        LLM                `json:"llm" yaml:"llm"`
	MCPServers map[string]*Server `json:"mcpServers" yaml:"mcpServers"`
	Sources    map[string]*Source `json:"sources" yaml:"sources"`
	Bindings   []Binding          `json:"bindings" yaml:"bindings"`
	Session    SessionDefaults    `json:"session" yaml:"session"`
	Approvals  rules.Config       `json:"approvals" yaml:"approvals"`
	Audit      Audit              `json:"audit" yaml:"audit"`
	Limits     Limits             `json:"limits" yaml:"limits"`
	// Hooks are commands run before and after tool calls, in Claude
	// Code's shape (docs/config.md).
	Hooks hooks.Config `json:"hooks" yaml:"hooks"`
	Serve Serve        `json:"serve" yaml:"serve"`
	// Permissions are Claude Code's settings.json lists (allow, ask,
	// deny of mcp__SERVER__TOOL patterns), loaded as approvals rules with
	// ids "permissions/allow[i]" and so on (see PermissionRules).
	Permissions PermissionLists `json:"permissions" yaml:"permissions"`
	// IgnoredPermissions are the patterns of Permissions that name no MCP
	// tool (Claude Code's own tools), which agenthost cannot apply.
	IgnoredPermissions []string `json:"-" yaml:"-"`

	// Managed is the administrator's managed policy that applies to this
	// configuration (nil: none). It is never read from the configuration
	// file: Load and LoadDefault read it from its own file (see
	// ApplyManaged).
	Managed *Managed `json:"-" yaml:"-"`
	// Local is the local settings file beside the configuration file (the
	// answers "always"; see Local), never read from the configuration
	// file itself; its entries are among Approvals.Rules. Nil when it holds
	// none (LoadLocal(LocalPath(File)) makes one to add to).
	Local *Local `json:"-" yaml:"-"`
	// Pins pins tool definitions to a lock file (docs/config.md).
	Pins Pins `json:"pins" yaml:"pins"`
	// Observability configures OpenTelemetry export; see Observability.
	Observability Observability `json:"observability" yaml:"observability"`
	// Sandbox is every stdio server's sandbox, unless its own block says
	// otherwise (see ServerSandbox). Off by default.
	Sandbox Sandbox `json:"sandbox" yaml:"sandbox"`
}

// Pins configures pinned tool definitions.
type Pins struct {
	// Enabled hides a tool whose definition differs from the pinned one,
	// and refuses its calls, until `agenthost pins approve`.
	Enabled bool `json:"enabled" yaml:"enabled"`
	// NewTools is what happens to a tool the lock file does not know:
	// allow (the default) or hide (treated as changed).
	NewTools string `json:"newTools" yaml:"newTools"`
	// File is the lock file; the default is agenthost.lock next to the
	// configuration file.
	File string `json:"file" yaml:"file"`
}

// Values of Pins.NewTools.
const (
	PinsNewToolsAllow = "allow"
	PinsNewToolsHide  = "hide"
)

// Observability configures OpenTelemetry traces and metrics (OTLP). Off
// unless Enabled is set or an OTEL_EXPORTER_OTLP_ENDPOINT-style variable
// is; the standard OTEL_* environment variables apply on top (see
// docs/config.md). Telemetry never carries secure values, session values,
// credentials, arguments or model text.
type Observability struct {
	Enabled bool `json:"enabled" yaml:"enabled"`
	// Endpoint is the OTLP endpoint (http://host:4318 for http/protobuf,
	// http://host:4317 for grpc); empty takes OTEL_EXPORTER_OTLP_ENDPOINT,
	// else the exporter's default on localhost.
	Endpoint string `json:"endpoint" yaml:"endpoint"`
	// Protocol is http/protobuf (the default) or grpc; empty takes
	// OTEL_EXPORTER_OTLP_PROTOCOL.
	Protocol string `json:"protocol" yaml:"protocol"`
	// Headers are sent with every export (a collector's API key, say).
	Headers map[string]string `json:"headers" yaml:"headers"`
	// ServiceName is the service.name resource attribute; empty takes
	// OTEL_SERVICE_NAME, else "agenthost".
	ServiceName string `json:"serviceName" yaml:"serviceName"`
}

// On reports whether telemetry is on: the section says enabled, or an
// OTLP endpoint variable (OTEL_EXPORTER_OTLP_ENDPOINT, or its _TRACES_ or
// _METRICS_ form) is set; OTEL_SDK_DISABLED=true turns it off either way.
// lookupEnv nil is os.LookupEnv. It is the one rule: host/otelobs sets
// telemetry up by it, and the CLI decides by it which build serves a
// command line (docs/cli.md, "Two binaries").
func (o Observability) On(lookupEnv func(string) (string, bool)) bool {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if v, _ := lookupEnv("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return false
	}
	if o.Enabled {
		return true
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if v, ok := lookupEnv(name); ok && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// Observability protocols.
const (
	OTLPProtocolHTTP = "http/protobuf"
	OTLPProtocolGRPC = "grpc"
)

// Limits bound what the host reads from servers and what it forwards to
// the model, in bytes; zero means the default.
type Limits struct {
	// MaxResponseBytes bounds one message read from a server: a stdio
	// line, an HTTP response body, one SSE event. A bigger message fails
	// the request(s) it answers with a protocol error.
	MaxResponseBytes int64 `json:"maxResponseBytes" yaml:"maxResponseBytes"`
	// MaxDefinitionBytes bounds one tool definition as listed; a bigger
	// tool is excluded, with the reason.
	MaxDefinitionBytes int64 `json:"maxDefinitionBytes" yaml:"maxDefinitionBytes"`
	// MaxModelResultBytes bounds the text of one tool result given to the
	// model; the rest is cut, with a note saying how much.
	MaxModelResultBytes int64 `json:"maxModelResultBytes" yaml:"maxModelResultBytes"`
}

// LLM selects the OpenAI-compatible model endpoint.
type LLM struct {
	BaseURL string        `json:"baseURL" yaml:"baseURL"`
	APIKey  string        `json:"apiKey" yaml:"apiKey"`
	Model   string        `json:"model" yaml:"model"`
	Timeout time.Duration `json:"timeout" yaml:"timeout"`
	// SystemPrompt is sent first in every model request (optional).
	SystemPrompt string `json:"systemPrompt" yaml:"systemPrompt"`
	// Prices are each model's token prices, for the cost a run reports
	// (`run --output-format stream-json`'s total_cost_usd); a model
	// without one costs 0.
	Prices map[string]Price `json:"prices" yaml:"prices"`
}

// Price is one model's token prices in USD per million tokens. CachedInput
// is the price of prompt tokens read from the provider's cache (0: the
// Input price).
type Price struct {
	Input       float64 `json:"input" yaml:"input"`
	Output      float64 `json:"output" yaml:"output"`
	CachedInput float64 `json:"cachedInput" yaml:"cachedInput"`
}

// Cost is what the token counts cost at p, in USD: prompt tokens of which
// cached were read from the cache, and completion tokens.
func (p Price) Cost(prompt, cached, completion int) float64 {
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	uncached := max(prompt-cached, 0)
	return (float64(uncached)*p.Input + float64(min(cached, prompt))*cachedPrice + float64(completion)*p.Output) / 1e6
}

// Transport names how agenthost reaches an MCP server.
type Transport string

// The transports agenthost speaks.
const (
	TransportStdio Transport = "stdio"
	TransportHTTP  Transport = "http"
	TransportSSE   Transport = "sse"
)

// Protocol version choices for Server.ProtocolVersion.
const (
	ProtocolAuto   = "auto"
	ProtocolLegacy = "2025-11-25"
	ProtocolModern = "2026-07-28"
)

// Choices for Server.Tasks.
const (
	TasksOff  = "off"
	TasksAuto = "auto"
)

// TasksExtension is the MCP Tasks extension identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// DefaultSecureParamsExtension is the SEP-3221 extension identifier.
const DefaultSecureParamsExtension = "io.modelcontextprotocol/secure-params"

// ToolboxSecureParamsExtension is the id under which Google's MCP Toolbox
// specifies secure parameters (same wire shape as SEP-3221; Toolbox hides
// tools with secure parameters from clients that do not declare it, offers
// them only on protocol 2026-07-28, and makes every secure parameter
// required).
const ToolboxSecureParamsExtension = "com.google.cloud/toolbox.v1"

// KnownSecureParamsExtensions are the secure-parameter extension ids the
// host recognises when a server advertises one it was not configured to
// declare.
var KnownSecureParamsExtensions = []string{DefaultSecureParamsExtension, ToolboxSecureParamsExtension}

// Server is one entry of mcpServers. Exactly one of Command (stdio) or URL
// (http/sse) is set after validation; Type is always filled in.
type Server struct {
	Name            string            `json:"-" yaml:"-"`
	Type            Transport         `json:"type" yaml:"type"`
	Command         string            `json:"command" yaml:"command"`
	Args            []string          `json:"args" yaml:"args"`
	Env             map[string]string `json:"env" yaml:"env"`
	Cwd             string            `json:"cwd" yaml:"cwd"`
	URL             string            `json:"url" yaml:"url"`
	Headers         map[string]string `json:"headers" yaml:"headers"`
	ProtocolVersion string            `json:"protocolVersion" yaml:"protocolVersion"` // auto | 2025-11-25 | 2026-07-28
	SecureParams    SecureParams      `json:"secureParams" yaml:"secureParams"`
	// TrustAnnotations takes server-declared risk metadata as-is.
	TrustAnnotations bool          `json:"trustAnnotations" yaml:"trustAnnotations"`
	Tools            ToolFilter    `json:"tools" yaml:"tools"`
	CallTimeout      time.Duration `json:"callTimeout" yaml:"callTimeout"`
	ConnectTimeout   time.Duration `json:"connectTimeout" yaml:"connectTimeout"`
	// Tasks is TasksOff (the default) or TasksAuto: declare the MCP Tasks
	// extension (io.modelcontextprotocol/tasks) on 2026-07-28 connections
	// and follow the task a call is answered with (docs/config.md).
	Tasks string `json:"tasks" yaml:"tasks"`
	// TaskTimeout bounds a call answered with a task, from the call to
	// the task's end, input rounds included.
	TaskTimeout time.Duration `json:"taskTimeout" yaml:"taskTimeout"`
	Disabled    bool          `json:"disabled" yaml:"disabled"`
	// OAuth configures the MCP authorization flow for a server reached by
	// url (docs/config.md). Without it the flow still runs, with dynamic
	// client registration, when the server answers 401.
	OAuth *OAuth `json:"oauth" yaml:"oauth"`
	// Sandbox confines a stdio server over the top-level sandbox (see
	// Config.ServerSandbox).
	Sandbox *Sandbox `json:"sandbox" yaml:"sandbox"`
}

// OAuth grants for OAuth.Grant.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	GrantIDJAG             = "id-jag"
	GrantJWTBearer         = "jwt-bearer"
)

// DPoP modes for OAuth.DPoP.
const (
	DPoPAuto     = "auto"
	DPoPRequired = "required"
	DPoPOff      = "off"
)

// OAuth configures a server's MCP authorization client. Tokens are never
// configured here: `agenthost auth login` stores them in a file of their
// own.
type OAuth struct {
	// Disabled turns the authorization flow off for the server.
	Disabled bool `json:"disabled" yaml:"disabled"`
	// ClientID and ClientSecret are a pre-registered client; the secret
	// should come from ${VAR}.
	ClientID     string `json:"clientId" yaml:"clientId"`
	ClientSecret string `json:"clientSecret" yaml:"clientSecret"`
	// ClientMetadataURL is the https URL of a Client ID Metadata Document
	// describing this client, used as its client id where the server
	// supports it.
	ClientMetadataURL string `json:"clientMetadataUrl" yaml:"clientMetadataUrl"`
	// Scopes are always requested.
	Scopes []string `json:"scopes" yaml:"scopes"`
	// TokenEndpointAuthMethod forces client_secret_basic,
	// client_secret_post, none or private_key_jwt.
	TokenEndpointAuthMethod string `json:"tokenEndpointAuthMethod" yaml:"tokenEndpointAuthMethod"`
	// Grant is authorization_code (default), client_credentials, id-jag
	// (enterprise-managed authorization, SEP-990) or jwt-bearer (workload
	// identity federation, SEP-1933).
	Grant string `json:"grant" yaml:"grant"`
	// AssertionFile (read each time a token is needed) or AssertionCommand
	// (an executable run directly with AssertionArgs, never through a
	// shell; its standard output is the assertion) gives the workload's
	// assertion for grant: jwt-bearer. AssertionSHA256 pins the
	// command's content (hex), as hooks' sha256 does.
	AssertionFile    string   `json:"assertionFile" yaml:"assertionFile"`
	AssertionCommand string   `json:"assertionCommand" yaml:"assertionCommand"`
	AssertionArgs    []string `json:"assertionArgs" yaml:"assertionArgs"`
	AssertionSHA256  string   `json:"assertionSha256" yaml:"assertionSha256"`
	// DPoP is auto (default: DPoP-bound tokens where the servers offer
	// them), required or off (RFC 9449).
	DPoP string `json:"dpop" yaml:"dpop"`
	// IDPTokenEndpoint, IDPClientID and IDPClientSecret (usually ${VAR})
	// are the enterprise identity provider of the id-jag grant and this
	// client's registration there.
	IDPTokenEndpoint string `json:"idpTokenEndpoint" yaml:"idpTokenEndpoint"`
	IDPClientID      string `json:"idpClientId" yaml:"idpClientId"`
	IDPClientSecret  string `json:"idpClientSecret" yaml:"idpClientSecret"`
	// IDToken (usually ${VAR}) or IDTokenFile (read each time a token is
	// needed) is the person's ID token the id-jag grant exchanges.
	IDToken     string `json:"idToken" yaml:"idToken"`
	IDTokenFile string `json:"idTokenFile" yaml:"idTokenFile"`
	// PrivateKey (PEM, usually ${VAR}) or PrivateKeyFile signs
	// private_key_jwt client assertions.
	PrivateKey     string `json:"privateKey" yaml:"privateKey"`
	PrivateKeyFile string `json:"privateKeyFile" yaml:"privateKeyFile"`
}

// SecureParams configures the SEP-3221 extension for one server.
type SecureParams struct {
	// Extensions are the extension ids declared to the server; the default
	// is [DefaultSecureParamsExtension]. Aliases such as
	// com.google.cloud/toolbox.v1 are allowed.
	Extensions []string `json:"extensions" yaml:"extensions"`
}

// ToolFilter selects which tools of a server are offered, by name glob.
// Deny wins over allow; an empty Allow means all.
type ToolFilter struct {
	Allow []string `json:"allow" yaml:"allow"`
	Deny  []string `json:"deny" yaml:"deny"`
}

// Source is a configured credential source beyond the built-ins.
type Source struct {
	Name   string         `json:"-" yaml:"-"`
	Plugin string         `json:"plugin" yaml:"plugin"`
	SHA256 string         `json:"sha256" yaml:"sha256"`
	Config map[string]any `json:"config" yaml:"config"`
	// Timeouts; zero means the default.
	StartTimeout time.Duration `json:"startTimeout" yaml:"startTimeout"`
	CallTimeout  time.Duration `json:"callTimeout" yaml:"callTimeout"`
	// Sandbox confines the plugin process (and whatever it runs) when its
	// mode is enforce; the top-level sandbox, the stdio servers' default,
	// does not apply to plugins (see Config.SourceSandbox).
	Sandbox *Sandbox `json:"sandbox" yaml:"sandbox"`
}

// Binding says which value fills which secure parameter of which tools.
// The type belongs to package bindings, which consumes it; config only
// reads it from the file.
type Binding = bindings.Binding

// ParamBinding names exactly one place a secure value comes from.
type ParamBinding = bindings.ParamBinding

// SessionDefaults are defaults for new sessions.
type SessionDefaults struct {
	TrustLevel int `json:"trustLevel" yaml:"trustLevel"`
}

// Audit configures the audit log.
type Audit struct {
	// Path of the JSON-lines audit file; "-" for stderr; "" disables (warned).
	Path string `json:"path" yaml:"path"`
	// Store is a database the records are also written to, as a hash
	// chain (`agenthost audit verify` checks it): sqlite:PATH or
	// postgres://...; "" for none. ${VAR} is expanded.
	Store string `json:"store" yaml:"store"`
	// ChainKeyFile names a file holding the key of Store's chain (keyed
	// links, docs/audit.md); the key itself is never in the config. The
	// AGENTHOST_AUDIT_KEY environment variable holds it instead.
	ChainKeyFile string `json:"chainKeyFile" yaml:"chainKeyFile"`
}
