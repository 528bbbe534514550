package config

import (
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/glob"
)

const (
	sensitivityValues     = "public, internal or secret"
	protocolVersionValues = ProtocolAuto + ", " + ProtocolLegacy + " or " + ProtocolModern
	paramKindsSentence    = "value, session, env, file or source"
)

// Validate checks the configuration and returns every problem found, each
// an [*Error] naming c.File and the key. Zero durations, an empty type and
// a zero trust level mean "use the default" and are accepted, so a Config
// built in Go validates before or after ApplyDefaults.
func (c *Config) Validate() error {
	p := &problem.List{File: c.File}
	for _, name := range problem.SortedKeys(c.LLM.Prices) {
		if pr := c.LLM.Prices[name]; pr.Input < 0 || pr.Output < 0 || pr.CachedInput < 0 {
			p.Add(problem.Key("llm.prices", name), "prices must not be negative")
		}
	}
	if c.LLM.Timeout < 0 {
		p.Add("llm.timeout", "must be positive")
	}
	if c.LLM.BaseURL != "" && !isHTTPURL(c.LLM.BaseURL) {
		p.Add("llm.baseURL", "must be an absolute http:// or https:// URL")
	}
	for _, name := range problem.SortedKeys(c.MCPServers) {
		validateServer(p, problem.Key("mcpServers", name), name, c.MCPServers[name])
	}
	for _, name := range problem.SortedKeys(c.Sources) {
		validateSource(p, problem.Key("sources", name), name, c.Sources[name])
	}
	for i := range c.Bindings {
		validateBinding(p, problem.Index("bindings", i), &c.Bindings[i])
	}
	if tl := c.Session.TrustLevel; tl != 0 && !risk.ValidTrustLevel(tl) {
		p.Addf("session.trustLevel", "must be between %d and %d", risk.MinTrust, risk.MaxTrust)
	}
	validateApprovals(p, &c.Approvals)
	validateStoreDSN(p, "approvals.store", c.Approvals.Store)
	validateStoreDSN(p, "audit.store", c.Audit.Store)
	validateLimits(p, &c.Limits)
	validateHooks(p, &c.Hooks)
	validateServe(p, &c.Serve)
	c.checkManaged(p)
	switch c.Pins.NewTools {
	case "", PinsNewToolsAllow, PinsNewToolsHide:
	default:
		p.Add("pins.newTools", "must be allow or hide")
	}
	validateObservability(p, &c.Observability)
	c.validateSandboxes(p)
	return p.Err()
}

func validateObservability(p *problem.List, o *Observability) {
	switch o.Protocol {
	case "", OTLPProtocolHTTP, OTLPProtocolGRPC:
	default:
		p.Addf("observability.protocol", "must be %s or %s", OTLPProtocolHTTP, OTLPProtocolGRPC)
	}
	if o.Endpoint != "" && !isHTTPURL(o.Endpoint) {
		p.Add("observability.endpoint", "must be an absolute http:// or https:// URL")
	}
}

func validateServer(p *problem.List, key, name string, srv *Server) {
	if name == "" {
		p.Add(key, "server name must not be empty")
	}
	if srv == nil {
		p.Add(key, "empty server entry; set exactly one of command or url")
		return
	}
	hasCommand, hasURL := srv.Command != "", srv.URL != ""
	if hasCommand == hasURL {
		p.Add(key, "set exactly one of command or url")
	}
	transport := srv.Type
	if transport != "" {
		t, ok := canonicalTransport(transport)
		if !ok {
			p.Add(problem.Key(key, "type"), "must be stdio, http (also written streamable-http) or sse")
		}
		transport = t
	}
	switch {
	case transport == TransportStdio && hasURL:
		p.Add(problem.Key(key, "type"), "stdio servers are started with command, not reached by url")
	case (transport == TransportHTTP || transport == TransportSSE) && hasCommand:
		p.Addf(problem.Key(key, "type"), "%s servers are reached by url, not started with command", transport)
	}
	if hasURL {
		if len(srv.Args) > 0 {
			p.Add(problem.Key(key, "args"), "only applies to servers started with command")
		}
		if len(srv.Env) > 0 {
			p.Add(problem.Key(key, "env"), "only applies to servers started with command")
		}
		if srv.Cwd != "" {
			p.Add(problem.Key(key, "cwd"), "only applies to servers started with command")
		}
		// A disabled server is not expanded, so its url may still hold ${VAR}.
		if !srv.Disabled && !isHTTPURL(srv.URL) {
			p.Add(problem.Key(key, "url"), "must be an absolute http:// or https:// URL")
		}
	}
	if hasCommand && len(srv.Headers) > 0 {
		p.Add(problem.Key(key, "headers"), "only applies to servers reached by url")
	}
	if srv.OAuth != nil {
		validateOAuth(p, problem.Key(key, "oauth"), srv, hasCommand)
	}
	for _, envName := range problem.SortedKeys(srv.Env) {
		if envName == "" || strings.ContainsAny(envName, "=\x00") {
			p.Add(problem.Key(problem.Key(key, "env"), envName), "is not a valid environment variable name")
		}
		if strings.ContainsRune(srv.Env[envName], 0) {
			p.Add(problem.Key(problem.Key(key, "env"), envName), "value must not contain a NUL byte")
		}
	}
	for _, header := range problem.SortedKeys(srv.Headers) {
		hkey := problem.Key(problem.Key(key, "headers"), header)
		if !isHeaderName(header) {
			p.Add(hkey, "is not a valid HTTP header name")
		}
		if strings.ContainsAny(srv.Headers[header], "\r\n\x00") {
			p.Add(hkey, "value must not contain line breaks or NUL bytes")
		}
	}
	switch srv.ProtocolVersion {
	case "", ProtocolAuto, ProtocolLegacy, ProtocolModern:
	default:
		p.Add(problem.Key(key, "protocolVersion"), "must be "+protocolVersionValues)
	}
	for i, ext := range srv.SecureParams.Extensions {
		if strings.TrimSpace(ext) == "" {
			p.Add(problem.Index(problem.Key(problem.Key(key, "secureParams"), "extensions"), i), "must not be empty")
		}
	}
	validateGlobs(p, problem.Key(problem.Key(key, "tools"), "allow"), srv.Tools.Allow)
	validateGlobs(p, problem.Key(problem.Key(key, "tools"), "deny"), srv.Tools.Deny)
	if srv.CallTimeout < 0 {
		p.Add(problem.Key(key, "callTimeout"), "must be positive")
	}
	if srv.ConnectTimeout < 0 {
		p.Add(problem.Key(key, "connectTimeout"), "must be positive")
	}
	switch strings.ToLower(srv.Tasks) {
	case "", TasksOff, TasksAuto:
	default:
		p.Add(problem.Key(key, "tasks"), "must be "+TasksOff+" or "+TasksAuto)
	}
	if srv.TaskTimeout < 0 || srv.TaskTimeout > MaxTaskTimeout {
		p.Add(problem.Key(key, "taskTimeout"), "must be positive and at most 24h")
	}
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// isHeaderName checks the RFC 9110 token syntax.
func isHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func validateGlobs(p *problem.List, key string, globs []string) {
	for i, g := range globs {
		validateGlob(p, problem.Index(key, i), g)
	}
}

// validateGlob checks a name pattern of the configuration's one glob
// dialect (package internal/glob).
func validateGlob(p *problem.List, key, pattern string) {
	if pattern == "" {
		p.Add(key, "empty pattern")
		return
	}
	if err := glob.Validate(pattern); err != nil {
		p.Addf(key, "invalid glob pattern %q: %v (glob syntax: %s)", pattern, err, glob.Syntax)
	}
}

// isSHA256Hex says whether s is 64 hexadecimal digits (either case).
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func validateSource(p *problem.List, key, name string, src *Source) {
	if name == "" {
		p.Add(key, "source name must not be empty")
	}
	if src == nil {
		p.Add(key, "empty source entry; set plugin and sha256")
		return
	}
	if src.Plugin == "" {
		p.Add(problem.Key(key, "plugin"), "is required (path of the plugin binary)")
	}
	switch {
	case src.SHA256 == "":
		p.Add(problem.Key(key, "sha256"), "is required (SHA-256 of the plugin binary, 64 hex digits)")
	case !isSHA256Hex(src.SHA256):
		p.Add(problem.Key(key, "sha256"), "must be 64 hex digits")
	}
	if src.StartTimeout < 0 {
		p.Add(problem.Key(key, "startTimeout"), "must be positive")
	}
	if src.CallTimeout < 0 {
		p.Add(problem.Key(key, "callTimeout"), "must be positive")
	}
}

func validateBinding(p *problem.List, key string, b *Binding) {
	if b.Server == "" {
		p.Add(problem.Key(key, "server"), "is required (server name or glob)")
	} else {
		validateGlob(p, problem.Key(key, "server"), b.Server)
	}
	validateGlobs(p, problem.Key(key, "tools"), b.Tools)
	if len(b.Params) == 0 {
		p.Add(problem.Key(key, "params"), "is required (secure parameter name -> where its value comes from)")
	}
	for _, name := range problem.SortedKeys(b.Params) {
		validateParam(p, problem.Key(problem.Key(key, "params"), name), b.Params[name])
	}
}

func validateParam(p *problem.List, key string, pb ParamBinding) {
	var kinds []string
	for _, k := range []struct {
		name string
		set  bool
	}{
		{"value", pb.Value != nil},
		{"session", pb.Session != ""},
		{"env", pb.Env != ""},
		{"file", pb.File != ""},
		{"source", pb.Source != ""},
	} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	switch len(kinds) {
	case 0:
		p.Add(key, "set exactly one of "+paramKindsSentence)
	case 1:
	default:
		p.Addf(key, "set exactly one of %s (found %s)", paramKindsSentence, strings.Join(kinds, " and "))
	}
	if msg := pb.RefProblem(); msg != "" {
		p.Add(problem.Key(key, "ref"), msg)
	}
	if pb.Sensitivity != "" {
		if _, err := bindings.ParseSensitivity(pb.Sensitivity); err != nil {
			p.Add(problem.Key(key, "sensitivity"), "must be "+sensitivityValues)
		}
	}
}

// CheckSources reports every binding that names a credential source which
// is neither configured under sources nor one of given (the sources a
// program supplies in Go, host.Options.Sources). [Config.Validate] leaves
// this check out, since only the program building the host knows what it
// supplies: host.New runs it with its given sources, and the CLI, which
// supplies none, right after loading.
func (c *Config) CheckSources(given ...string) error {
	p := &problem.List{File: c.File}
	for i := range c.Bindings {
		for _, name := range problem.SortedKeys(c.Bindings[i].Params) {
			src := c.Bindings[i].Params[name].Source
			if src == "" {
				continue
			}
			if _, ok := c.Sources[src]; ok || slices.Contains(given, src) {
				continue
			}
			p.Addf(problem.Key(problem.Key(problem.Key(problem.Index("bindings", i), "params"), name), "source"), "names source %q, which is not configured under sources nor supplied by the program", src)
		}
	}
	return p.Err()
}

// validateApprovals runs the approvals package's checks and files each
// problem under "approvals.", keeping the approvals error as the cause.
func validateApprovals(p *problem.List, cfg interface{ Validate() error }) {
	err := cfg.Validate()
	if err == nil {
		return
	}
	for _, leaf := range problem.Leaves(err) {
		key, msg := "approvals", leaf.Error()
		var field *risk.FieldError
		if errors.As(leaf, &field) && field.Key != "" {
			key, msg = problem.Join("approvals", field.Key), field.Msg
		}
		p.AddCause(key, msg, leaf)
	}
}

// validateHooks reports the hooks section's problems under their keys.
func validateHooks(p *problem.List, cfg *hooks.Config) {
	err := cfg.Validate()
	if err == nil {
		return
	}
	for _, leaf := range problem.Leaves(err) {
		key, msg := "hooks", leaf.Error()
		var field *hooks.FieldError
		if errors.As(leaf, &field) && field.Key != "" {
			key, msg = problem.Join("hooks", field.Key), field.Msg
		}
		p.AddCause(key, msg, leaf)
	}
}

// validateLimits: zero means the default; a limit below a few KiB would
// refuse ordinary messages.
func validateLimits(p *problem.List, l *Limits) {
	for _, f := range []struct {
		key   string
		value int64
	}{
		{"limits.maxResponseBytes", l.MaxResponseBytes},
		{"limits.maxDefinitionBytes", l.MaxDefinitionBytes},
		{"limits.maxModelResultBytes", l.MaxModelResultBytes},
	} {
		if f.value != 0 && f.value < MinLimitBytes {
			p.Addf(f.key, "must be at least %d bytes (0 or absent: the default)", MinLimitBytes)
		}
	}
}

// MinLimitBytes is the smallest value a limits setting accepts.
const MinLimitBytes = 1024

func validateOAuth(p *problem.List, key string, srv *Server, hasCommand bool) {
	o := srv.OAuth
	if hasCommand {
		p.Add(key, "only applies to servers reached by url")
		return
	}
	if o.Disabled {
		return
	}
	for h := range srv.Headers {
		if strings.EqualFold(h, "Authorization") {
			p.Add(key, "a static Authorization header and oauth exclude each other; remove one (or set oauth.disabled: true)")
		}
	}
	switch o.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientID == "" {
			p.Add(problem.Key(key, "clientId"), "is required with grant: client_credentials")
		}
		if o.ClientSecret == "" && o.PrivateKey == "" && o.PrivateKeyFile == "" {
			p.Add(key, "grant: client_credentials needs clientSecret, privateKey or privateKeyFile")
		}
	case GrantIDJAG:
		if o.ClientID == "" {
			p.Add(problem.Key(key, "clientId"), "is required with grant: id-jag")
		}
		if o.IDPTokenEndpoint == "" {
			p.Add(problem.Key(key, "idpTokenEndpoint"), "is required with grant: id-jag")
		} else if !isHTTPURL(o.IDPTokenEndpoint) {
			p.Add(problem.Key(key, "idpTokenEndpoint"), "must be an http(s) URL")
		}
		if o.IDToken == "" && o.IDTokenFile == "" {
			p.Add(key, "grant: id-jag needs idToken or idTokenFile")
		}
	case GrantJWTBearer:
		if (o.AssertionFile == "") == (o.AssertionCommand == "") {
			p.Add(key, "grant: jwt-bearer needs assertionFile or assertionCommand (one of them)")
		}
	default:
		p.Add(problem.Key(key, "grant"), "must be authorization_code, client_credentials, id-jag or jwt-bearer")
	}
	if o.Grant != GrantJWTBearer {
		for _, f := range []struct {
			name string
			set  bool
		}{{"assertionFile", o.AssertionFile != ""}, {"assertionCommand", o.AssertionCommand != ""},
			{"assertionArgs", len(o.AssertionArgs) > 0}, {"assertionSha256", o.AssertionSHA256 != ""}} {
			if f.set {
				p.Add(problem.Key(key, f.name), "only applies to grant: jwt-bearer")
			}
		}
	}
	if (len(o.AssertionArgs) > 0 || o.AssertionSHA256 != "") && o.AssertionCommand == "" {
		p.Add(problem.Key(key, "assertionCommand"), "is required with assertionArgs or assertionSha256")
	}
	if o.AssertionSHA256 != "" && !isSHA256Hex(o.AssertionSHA256) {
		p.Add(problem.Key(key, "assertionSha256"), "must be 64 hex digits")
	}
	switch o.DPoP {
	case "", DPoPAuto, DPoPRequired, DPoPOff:
	default:
		p.Add(problem.Key(key, "dpop"), "must be auto, required or off")
	}
	if o.IDToken != "" && o.IDTokenFile != "" {
		p.Add(problem.Key(key, "idToken"), "set idToken or idTokenFile, not both")
	}
	if o.IDPClientSecret != "" && o.IDPClientID == "" {
		p.Add(problem.Key(key, "idpClientSecret"), "needs idpClientId")
	}
	switch o.TokenEndpointAuthMethod {
	case "", "client_secret_basic", "client_secret_post", "none", "private_key_jwt":
	default:
		p.Add(problem.Key(key, "tokenEndpointAuthMethod"), "must be client_secret_basic, client_secret_post, none or private_key_jwt")
	}
	if o.TokenEndpointAuthMethod == "private_key_jwt" && o.PrivateKey == "" && o.PrivateKeyFile == "" {
		p.Add(problem.Key(key, "tokenEndpointAuthMethod"), "private_key_jwt needs privateKey or privateKeyFile")
	}
	if o.PrivateKey != "" && o.PrivateKeyFile != "" {
		p.Add(problem.Key(key, "privateKey"), "set privateKey or privateKeyFile, not both")
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		p.Add(problem.Key(key, "clientSecret"), "needs clientId")
	}
	if u := o.ClientMetadataURL; u != "" && (!strings.HasPrefix(u, "https://") || !isHTTPURL(u)) {
		p.Add(problem.Key(key, "clientMetadataUrl"), "must be an https:// URL")
	}
	for i, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"") {
			p.Add(problem.Index(problem.Key(key, "scopes"), i), "must be one scope token without spaces or quotes")
		}
	}
}

// validateStoreDSN checks a database setting: empty, sqlite:PATH or a
// postgres:// URL. The message never repeats the value (it may hold a
// password).
func validateStoreDSN(p *problem.List, key, dsn string) {
	switch {
	case dsn == "":
	case strings.HasPrefix(dsn, "sqlite:"):
		if strings.TrimPrefix(dsn, "sqlite:") == "" {
			p.Add(key, "sqlite: needs a file path (sqlite:PATH)")
		}
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			p.Add(key, "is not a valid postgres:// URL")
		}
	default:
		p.Add(key, "must be sqlite:PATH or a postgres://user:password@host:port/database URL")
	}
}
