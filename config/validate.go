package config

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/bindings"
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
	p := &problems{file: c.File}
	for _, name := range sortedKeys(c.LLM.Prices) {
		if pr := c.LLM.Prices[name]; pr.Input < 0 || pr.Output < 0 || pr.CachedInput < 0 {
			p.add(childKey("llm.prices", name), "prices must not be negative")
		}
	}
	if c.LLM.Timeout < 0 {
		p.add("llm.timeout", "must be positive")
	}
	if c.LLM.BaseURL != "" && !isHTTPURL(c.LLM.BaseURL) {
		p.add("llm.baseURL", "must be an absolute http:// or https:// URL")
	}
	for _, name := range sortedKeys(c.MCPServers) {
		validateServer(p, childKey("mcpServers", name), name, c.MCPServers[name])
	}
	for _, name := range sortedKeys(c.Sources) {
		validateSource(p, childKey("sources", name), name, c.Sources[name])
	}
	for i := range c.Bindings {
		validateBinding(p, indexKey("bindings", i), &c.Bindings[i])
	}
	if tl := c.Session.TrustLevel; tl != 0 && !risk.ValidTrustLevel(tl) {
		p.addf("session.trustLevel", "must be between %d and %d", risk.MinTrust, risk.MaxTrust)
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
		p.add("pins.newTools", "must be allow or hide")
	}
	validateObservability(p, &c.Observability)
	c.validateSandboxes(p)
	return p.err()
}

func validateObservability(p *problems, o *Observability) {
	switch o.Protocol {
	case "", OTLPProtocolHTTP, OTLPProtocolGRPC:
	default:
		p.addf("observability.protocol", "must be %s or %s", OTLPProtocolHTTP, OTLPProtocolGRPC)
	}
	if o.Endpoint != "" && !isHTTPURL(o.Endpoint) {
		p.add("observability.endpoint", "must be an absolute http:// or https:// URL")
	}
}

func validateServer(p *problems, key, name string, srv *Server) {
	if name == "" {
		p.add(key, "server name must not be empty")
	}
	if srv == nil {
		p.add(key, "empty server entry; set exactly one of command or url")
		return
	}
	hasCommand, hasURL := srv.Command != "", srv.URL != ""
	if hasCommand == hasURL {
		p.add(key, "set exactly one of command or url")
	}
	transport := srv.Type
	if transport != "" {
		t, ok := canonicalTransport(transport)
		if !ok {
			p.add(childKey(key, "type"), "must be stdio, http (also written streamable-http) or sse")
		}
		transport = t
	}
	switch {
	case transport == TransportStdio && hasURL:
		p.add(childKey(key, "type"), "stdio servers are started with command, not reached by url")
	case (transport == TransportHTTP || transport == TransportSSE) && hasCommand:
		p.addf(childKey(key, "type"), "%s servers are reached by url, not started with command", transport)
	}
	if hasURL {
		if len(srv.Args) > 0 {
			p.add(childKey(key, "args"), "only applies to servers started with command")
		}
		if len(srv.Env) > 0 {
			p.add(childKey(key, "env"), "only applies to servers started with command")
		}
		if srv.Cwd != "" {
			p.add(childKey(key, "cwd"), "only applies to servers started with command")
		}
		// A disabled server is not expanded, so its url may still hold ${VAR}.
		if !srv.Disabled && !isHTTPURL(srv.URL) {
			p.add(childKey(key, "url"), "must be an absolute http:// or https:// URL")
		}
	}
	if hasCommand && len(srv.Headers) > 0 {
		p.add(childKey(key, "headers"), "only applies to servers reached by url")
	}
	if srv.OAuth != nil {
		validateOAuth(p, childKey(key, "oauth"), srv, hasCommand)
	}
	for _, envName := range sortedKeys(srv.Env) {
		if envName == "" || strings.ContainsAny(envName, "=\x00") {
			p.add(childKey(childKey(key, "env"), envName), "is not a valid environment variable name")
		}
		if strings.ContainsRune(srv.Env[envName], 0) {
			p.add(childKey(childKey(key, "env"), envName), "value must not contain a NUL byte")
		}
	}
	for _, header := range sortedKeys(srv.Headers) {
		hkey := childKey(childKey(key, "headers"), header)
		if !isHeaderName(header) {
			p.add(hkey, "is not a valid HTTP header name")
		}
		if strings.ContainsAny(srv.Headers[header], "\r\n\x00") {
			p.add(hkey, "value must not contain line breaks or NUL bytes")
		}
	}
	switch srv.ProtocolVersion {
	case "", ProtocolAuto, ProtocolLegacy, ProtocolModern:
	default:
		p.add(childKey(key, "protocolVersion"), "must be "+protocolVersionValues)
	}
	for i, ext := range srv.SecureParams.Extensions {
		if strings.TrimSpace(ext) == "" {
			p.add(indexKey(childKey(childKey(key, "secureParams"), "extensions"), i), "must not be empty")
		}
	}
	validateGlobs(p, childKey(childKey(key, "tools"), "allow"), srv.Tools.Allow)
	validateGlobs(p, childKey(childKey(key, "tools"), "deny"), srv.Tools.Deny)
	if srv.CallTimeout < 0 {
		p.add(childKey(key, "callTimeout"), "must be positive")
	}
	if srv.ConnectTimeout < 0 {
		p.add(childKey(key, "connectTimeout"), "must be positive")
	}
	switch strings.ToLower(srv.Tasks) {
	case "", TasksOff, TasksAuto:
	default:
		p.add(childKey(key, "tasks"), "must be "+TasksOff+" or "+TasksAuto)
	}
	if srv.TaskTimeout < 0 || srv.TaskTimeout > MaxTaskTimeout {
		p.add(childKey(key, "taskTimeout"), "must be positive and at most 24h")
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

func validateGlobs(p *problems, key string, globs []string) {
	for i, g := range globs {
		validateGlob(p, indexKey(key, i), g)
	}
}

// validateGlob checks a name pattern of the configuration's one glob
// dialect (package internal/glob).
func validateGlob(p *problems, key, pattern string) {
	if pattern == "" {
		p.add(key, "empty pattern")
		return
	}
	if err := glob.Validate(pattern); err != nil {
		p.addf(key, "invalid glob pattern %q: %v (glob syntax: %s)", pattern, err, glob.Syntax)
	}
}

var sha256Hex = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

func validateSource(p *problems, key, name string, src *Source) {
	if name == "" {
		p.add(key, "source name must not be empty")
	}
	if src == nil {
		p.add(key, "empty source entry; set plugin and sha256")
		return
	}
	if src.Plugin == "" {
		p.add(childKey(key, "plugin"), "is required (path of the plugin binary)")
	}
	switch {
	case src.SHA256 == "":
		p.add(childKey(key, "sha256"), "is required (SHA-256 of the plugin binary, 64 hex digits)")
	case !sha256Hex.MatchString(src.SHA256):
		p.add(childKey(key, "sha256"), "must be 64 hex digits")
	}
	if src.StartTimeout < 0 {
		p.add(childKey(key, "startTimeout"), "must be positive")
	}
	if src.CallTimeout < 0 {
		p.add(childKey(key, "callTimeout"), "must be positive")
	}
}

func validateBinding(p *problems, key string, b *Binding) {
	if b.Server == "" {
		p.add(childKey(key, "server"), "is required (server name or glob)")
	} else {
		validateGlob(p, childKey(key, "server"), b.Server)
	}
	validateGlobs(p, childKey(key, "tools"), b.Tools)
	if len(b.Params) == 0 {
		p.add(childKey(key, "params"), "is required (secure parameter name -> where its value comes from)")
	}
	for _, name := range sortedKeys(b.Params) {
		validateParam(p, childKey(childKey(key, "params"), name), b.Params[name])
	}
}

func validateParam(p *problems, key string, pb ParamBinding) {
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
		p.add(key, "set exactly one of "+paramKindsSentence)
	case 1:
	default:
		p.addf(key, "set exactly one of %s (found %s)", paramKindsSentence, strings.Join(kinds, " and "))
	}
	if msg := pb.RefProblem(); msg != "" {
		p.add(childKey(key, "ref"), msg)
	}
	if pb.Sensitivity != "" {
		if _, err := bindings.ParseSensitivity(pb.Sensitivity); err != nil {
			p.add(childKey(key, "sensitivity"), "must be "+sensitivityValues)
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
	p := &problems{file: c.File}
	for i := range c.Bindings {
		for _, name := range sortedKeys(c.Bindings[i].Params) {
			src := c.Bindings[i].Params[name].Source
			if src == "" {
				continue
			}
			if _, ok := c.Sources[src]; ok || slices.Contains(given, src) {
				continue
			}
			p.addf(childKey(childKey(childKey(indexKey("bindings", i), "params"), name), "source"), "names source %q, which is not configured under sources nor supplied by the program", src)
		}
	}
	return p.err()
}

// validateApprovals runs the approvals package's checks and files each
// problem under "approvals.", keeping the approvals error as the cause.
func validateApprovals(p *problems, cfg interface{ Validate() error }) {
	err := cfg.Validate()
	if err == nil {
		return
	}
	for _, leaf := range leafErrors(err) {
		key, msg := "approvals", leaf.Error()
		var field *risk.FieldError
		if errors.As(leaf, &field) && field.Key != "" {
			key, msg = childKeyPath("approvals", field.Key), field.Msg
		}
		p.list = append(p.list, &Error{File: p.file, Key: key, Msg: msg, Err: leaf})
	}
}

// validateHooks reports the hooks section's problems under their keys.
func validateHooks(p *problems, cfg *hooks.Config) {
	err := cfg.Validate()
	if err == nil {
		return
	}
	for _, leaf := range leafErrors(err) {
		key, msg := "hooks", leaf.Error()
		var field *hooks.FieldError
		if errors.As(leaf, &field) && field.Key != "" {
			key, msg = childKeyPath("hooks", field.Key), field.Msg
		}
		p.list = append(p.list, &Error{File: p.file, Key: key, Msg: msg, Err: leaf})
	}
}

// childKeyPath appends an already formatted relative key path.
func childKeyPath(parent, rel string) string {
	if strings.HasPrefix(rel, "[") {
		return parent + rel
	}
	return parent + "." + rel
}

// leafErrors flattens errors.Join trees.
func leafErrors(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var leaves []error
		for _, e := range joined.Unwrap() {
			leaves = append(leaves, leafErrors(e)...)
		}
		return leaves
	}
	return []error{err}
}

// validateLimits: zero means the default; a limit below a few KiB would
// refuse ordinary messages.
func validateLimits(p *problems, l *Limits) {
	for _, f := range []struct {
		key   string
		value int64
	}{
		{"limits.maxResponseBytes", l.MaxResponseBytes},
		{"limits.maxDefinitionBytes", l.MaxDefinitionBytes},
		{"limits.maxModelResultBytes", l.MaxModelResultBytes},
	} {
		if f.value != 0 && f.value < MinLimitBytes {
			p.addf(f.key, "must be at least %d bytes (0 or absent: the default)", MinLimitBytes)
		}
	}
}

// MinLimitBytes is the smallest value a limits setting accepts.
const MinLimitBytes = 1024

func validateOAuth(p *problems, key string, srv *Server, hasCommand bool) {
	o := srv.OAuth
	if hasCommand {
		p.add(key, "only applies to servers reached by url")
		return
	}
	if o.Disabled {
		return
	}
	for h := range srv.Headers {
		if strings.EqualFold(h, "Authorization") {
			p.add(key, "a static Authorization header and oauth exclude each other; remove one (or set oauth.disabled: true)")
		}
	}
	switch o.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientID == "" {
			p.add(childKey(key, "clientId"), "is required with grant: client_credentials")
		}
		if o.ClientSecret == "" && o.PrivateKey == "" && o.PrivateKeyFile == "" {
			p.add(key, "grant: client_credentials needs clientSecret, privateKey or privateKeyFile")
		}
	case GrantIDJAG:
		if o.ClientID == "" {
			p.add(childKey(key, "clientId"), "is required with grant: id-jag")
		}
		if o.IDPTokenEndpoint == "" {
			p.add(childKey(key, "idpTokenEndpoint"), "is required with grant: id-jag")
		} else if !isHTTPURL(o.IDPTokenEndpoint) {
			p.add(childKey(key, "idpTokenEndpoint"), "must be an http(s) URL")
		}
		if o.IDToken == "" && o.IDTokenFile == "" {
			p.add(key, "grant: id-jag needs idToken or idTokenFile")
		}
	case GrantJWTBearer:
		if (o.AssertionFile == "") == (o.AssertionCommand == "") {
			p.add(key, "grant: jwt-bearer needs assertionFile or assertionCommand (one of them)")
		}
	default:
		p.add(childKey(key, "grant"), "must be authorization_code, client_credentials, id-jag or jwt-bearer")
	}
	if o.Grant != GrantJWTBearer {
		for _, f := range []struct {
			name string
			set  bool
		}{{"assertionFile", o.AssertionFile != ""}, {"assertionCommand", o.AssertionCommand != ""},
			{"assertionArgs", len(o.AssertionArgs) > 0}, {"assertionSha256", o.AssertionSHA256 != ""}} {
			if f.set {
				p.add(childKey(key, f.name), "only applies to grant: jwt-bearer")
			}
		}
	}
	if (len(o.AssertionArgs) > 0 || o.AssertionSHA256 != "") && o.AssertionCommand == "" {
		p.add(childKey(key, "assertionCommand"), "is required with assertionArgs or assertionSha256")
	}
	if o.AssertionSHA256 != "" && !sha256Hex.MatchString(o.AssertionSHA256) {
		p.add(childKey(key, "assertionSha256"), "must be 64 hex digits")
	}
	switch o.DPoP {
	case "", DPoPAuto, DPoPRequired, DPoPOff:
	default:
		p.add(childKey(key, "dpop"), "must be auto, required or off")
	}
	if o.IDToken != "" && o.IDTokenFile != "" {
		p.add(childKey(key, "idToken"), "set idToken or idTokenFile, not both")
	}
	if o.IDPClientSecret != "" && o.IDPClientID == "" {
		p.add(childKey(key, "idpClientSecret"), "needs idpClientId")
	}
	switch o.TokenEndpointAuthMethod {
	case "", "client_secret_basic", "client_secret_post", "none", "private_key_jwt":
	default:
		p.add(childKey(key, "tokenEndpointAuthMethod"), "must be client_secret_basic, client_secret_post, none or private_key_jwt")
	}
	if o.TokenEndpointAuthMethod == "private_key_jwt" && o.PrivateKey == "" && o.PrivateKeyFile == "" {
		p.add(childKey(key, "tokenEndpointAuthMethod"), "private_key_jwt needs privateKey or privateKeyFile")
	}
	if o.PrivateKey != "" && o.PrivateKeyFile != "" {
		p.add(childKey(key, "privateKey"), "set privateKey or privateKeyFile, not both")
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		p.add(childKey(key, "clientSecret"), "needs clientId")
	}
	if u := o.ClientMetadataURL; u != "" && (!strings.HasPrefix(u, "https://") || !isHTTPURL(u)) {
		p.add(childKey(key, "clientMetadataUrl"), "must be an https:// URL")
	}
	for i, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"") {
			p.add(indexKey(childKey(key, "scopes"), i), "must be one scope token without spaces or quotes")
		}
	}
}

// validateStoreDSN checks a database setting: empty, sqlite:PATH or a
// postgres:// URL. The message never repeats the value (it may hold a
// password).
func validateStoreDSN(p *problems, key, dsn string) {
	switch {
	case dsn == "":
	case strings.HasPrefix(dsn, "sqlite:"):
		if strings.TrimPrefix(dsn, "sqlite:") == "" {
			p.add(key, "sqlite: needs a file path (sqlite:PATH)")
		}
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		if _, err := url.Parse(dsn); err != nil {
			p.add(key, "is not a valid postgres:// URL")
		}
	default:
		p.add(key, "must be sqlite:PATH or a postgres://user:password@host:port/database URL")
	}
}
