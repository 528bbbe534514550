package config

import (
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
)

// Defaults filled in by ApplyDefaults. The approvals section defaults to
// rules.UnclassifiedAsk, rules.ActionAsk when no rule matches,
// and rules.DefaultTimeout.
const (
	DefaultCallTimeout    = 60 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	// DefaultTaskTimeout: a task is work a server runs for longer than a
	// call; ten minutes covers builds and reports, and a person answering
	// its questions.
	DefaultTaskTimeout = 10 * time.Minute
	// MaxTaskTimeout caps taskTimeout.
	MaxTaskTimeout    = 24 * time.Hour
	DefaultLLMTimeout = 120 * time.Second
	DefaultTrustLevel = 1

	// DefaultMaxResponseBytes: far above any real result (a listing of
	// thousands of tools is a few MiB), small enough that one message
	// cannot exhaust the host's memory.
	DefaultMaxResponseBytes = 64 << 20
	// DefaultMaxDefinitionBytes: real tool definitions are a few KiB; a
	// definition is sent to the model on every request of every session.
	DefaultMaxDefinitionBytes = 1 << 20
	// DefaultMaxModelResultBytes: about 64k tokens, a large share of a
	// model's context, and a result stays in the conversation (it is sent
	// again on every later request of the session).
	DefaultMaxModelResultBytes = 256 << 10
)

// ApplyDefaults fills every setting left at its zero value with its
// default and normalises spellings: Server.Name and Source.Name from their
// map keys, Server.Type from command/url ("streamable-http" and
// "streamableHttp" become "http"), sha256 pins in lower case. Parse and
// Load call it; a program that builds a Config in Go calls it before
// Validate.
func (c *Config) ApplyDefaults() {
	if c.LLM.Timeout == 0 {
		c.LLM.Timeout = DefaultLLMTimeout
	}
	for name, srv := range c.MCPServers {
		if srv == nil {
			srv = &Server{}
			c.MCPServers[name] = srv
		}
		srv.Name = name
		if t, ok := canonicalTransport(srv.Type); ok {
			srv.Type = t
		}
		if srv.Type == "" {
			switch {
			case srv.Command != "" && srv.URL == "":
				srv.Type = TransportStdio
			case srv.URL != "" && srv.Command == "":
				srv.Type = TransportHTTP
			}
		}
		if srv.ProtocolVersion == "" {
			srv.ProtocolVersion = ProtocolAuto
		}
		if len(srv.SecureParams.Extensions) == 0 {
			srv.SecureParams.Extensions = []string{DefaultSecureParamsExtension}
		}
		if srv.CallTimeout == 0 {
			srv.CallTimeout = DefaultCallTimeout
		}
		if srv.ConnectTimeout == 0 {
			srv.ConnectTimeout = DefaultConnectTimeout
		}
		srv.Tasks = strings.ToLower(srv.Tasks)
		if srv.Tasks == "" {
			srv.Tasks = TasksOff
		}
		if srv.TaskTimeout == 0 {
			srv.TaskTimeout = DefaultTaskTimeout
		}
	}
	for name, src := range c.Sources {
		if src == nil {
			src = &Source{}
			c.Sources[name] = src
		}
		src.Name = name
		src.SHA256 = strings.ToLower(src.SHA256)
	}
	if c.Session.TrustLevel == 0 {
		c.Session.TrustLevel = DefaultTrustLevel
	}
	if c.Approvals.Unclassified == "" {
		c.Approvals.Unclassified = rules.UnclassifiedAsk
	}
	if c.Approvals.NoMatch == "" {
		c.Approvals.NoMatch = string(rules.ActionAsk)
	}
	if c.Limits.MaxResponseBytes == 0 {
		c.Limits.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Limits.MaxDefinitionBytes == 0 {
		c.Limits.MaxDefinitionBytes = DefaultMaxDefinitionBytes
	}
	if c.Limits.MaxModelResultBytes == 0 {
		c.Limits.MaxModelResultBytes = DefaultMaxModelResultBytes
	}
	if c.Approvals.Timeout == 0 {
		c.Approvals.Timeout = rules.DefaultTimeout
	}
}

// canonicalTransport accepts the spellings used by Claude Desktop, Cursor
// and VS Code configuration files.
func canonicalTransport(t Transport) (Transport, bool) {
	switch strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(string(t))) {
	case "stdio":
		return TransportStdio, true
	case "http", "streamablehttp":
		return TransportHTTP, true
	case "sse":
		return TransportSSE, true
	}
	return "", false
}
