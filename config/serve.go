package config

import (
	"encoding/hex"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals/ids"
	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/glob"
)

// Serve configures `agenthost serve` (docs/config.md, "serve").
type Serve struct {
	// Listen is the address the HTTP API listens on (default 127.0.0.1:8080).
	Listen string `json:"listen" yaml:"listen"`
	// PublicURL is how approvers reach this server; webhook payloads link
	// to its approvals page. Empty: no link.
	PublicURL string `json:"publicURL" yaml:"publicURL"`
	// Identities are the API callers and approvers, each a named identity
	// authenticated by a bearer token (stored as its SHA-256) or, with
	// tls.clientCA, by a client certificate whose common name is the name.
	Identities []Identity `json:"identities" yaml:"identities"`
	TLS        ServeTLS   `json:"tls" yaml:"tls"`
	// Webhooks receive each pending approval request.
	Webhooks []Webhook `json:"webhooks" yaml:"webhooks"`
	// MaxSessions bounds the sessions one replica holds (default 10000).
	MaxSessions int `json:"maxSessions" yaml:"maxSessions"`
	// MaxSessionsPerIdentity bounds the sessions one api identity holds on
	// one replica (default 1000, at most MaxSessions), so that one caller
	// cannot take every other caller's share.
	MaxSessionsPerIdentity int `json:"maxSessionsPerIdentity" yaml:"maxSessionsPerIdentity"`
	// MaxApprovalStreamsPerIdentity bounds the open GET
	// /v1/approvals/events streams of one approver identity (default 100);
	// past it that identity's new streams are refused with 429.
	MaxApprovalStreamsPerIdentity int `json:"maxApprovalStreamsPerIdentity" yaml:"maxApprovalStreamsPerIdentity"`
	// ReadTimeout bounds reading one request, head and body (default 30s).
	ReadTimeout time.Duration `json:"readTimeout" yaml:"readTimeout"`
	// WriteTimeout bounds writing one answer (default 60s); an event stream
	// instead gets it anew for each write, so a stream lives as long as its
	// client reads it.
	WriteTimeout time.Duration `json:"writeTimeout" yaml:"writeTimeout"`
	// IdleTimeout closes a kept-alive connection that sends no request for
	// this long (default 30s).
	IdleTimeout time.Duration `json:"idleTimeout" yaml:"idleTimeout"`
	// MaxConnections bounds the open connections (default 4096) and
	// MaxConnectionsPerClient those from one client IP address (default
	// 256, at most MaxConnections). At either bound the connection that
	// has waited longest for a request is closed to make room.
	MaxConnections          int `json:"maxConnections" yaml:"maxConnections"`
	MaxConnectionsPerClient int `json:"maxConnectionsPerClient" yaml:"maxConnectionsPerClient"`
	// Events bound what served sessions keep of their turns' events.
	Events ServeEvents `json:"events" yaml:"events"`
	// Replica names this replica and its peers, for many replicas behind
	// one address (docs/config.md, "serve.replica").
	Replica Replica `json:"replica" yaml:"replica"`
}

// ServeEvents bounds the events a served session keeps for its event
// stream and for clients that reconnect (docs/config.md, "serve").
type ServeEvents struct {
	// MaxResultBytes bounds the content of one tool_result event (default
	// limits.maxModelResultBytes): a larger one is kept as the text the
	// model was given, cut with a note.
	MaxResultBytes int64 `json:"maxResultBytes" yaml:"maxResultBytes"`
	// MaxSessionBytes bounds the events one session keeps of its latest
	// turn (default 16 MiB); past it the oldest are dropped.
	MaxSessionBytes int64 `json:"maxSessionBytes" yaml:"maxSessionBytes"`
	// MaxTotalBytes bounds the events all sessions keep (default 512 MiB);
	// past it ended turns lose theirs first, oldest first.
	MaxTotalBytes int64 `json:"maxTotalBytes" yaml:"maxTotalBytes"`
}

// Identity is one named caller of the serve API.
type Identity struct {
	Name string `json:"name" yaml:"name"`
	// TokenSHA256 is the hex SHA-256 of the bearer token (never the token).
	TokenSHA256 string `json:"tokenSHA256" yaml:"tokenSHA256"`
	// Roles: api (sessions, turns, tools, audit) and/or approver (approvals
	// and the approvals page).
	Roles []string `json:"roles" yaml:"roles"`
	// Subjects are the subjects the identity may create sessions for:
	// globs (the config's one dialect) matched against the subject's
	// normalised form (ids.NormalizeID), so written in that form
	// (lower case). The identity's own name is always allowed; empty, it
	// is the only one. A session's subject selects whose OAuth tokens and
	// credentials its calls use, so this is what the identity may act as.
	Subjects []string `json:"subjects" yaml:"subjects"`
	// Tenant, when set, makes the sessions the identity creates belong to
	// the tenant: every identity of the same tenant may read, drive and
	// delete them. Empty: they belong to the identity alone.
	Tenant string `json:"tenant" yaml:"tenant"`
}

// Roles of a serve identity.
const (
	RoleAPI      = "api"
	RoleApprover = "approver"
)

// ServeTLS turns on HTTPS and, with ClientCA, mutual TLS.
type ServeTLS struct {
	Cert string `json:"cert" yaml:"cert"`
	Key  string `json:"key" yaml:"key"`
	// ClientCA: PEM file of the CAs that sign client certificates. Set, a
	// client may authenticate by certificate instead of a token.
	ClientCA string `json:"clientCA" yaml:"clientCA"`
}

// Webhook is one receiver of pending approval requests.
type Webhook struct {
	URL string `json:"url" yaml:"url"`
	// Secret keys the HMAC-SHA256 signature (write it as ${VAR}).
	Secret string `json:"secret" yaml:"secret"`
	// Timeout bounds one delivery attempt (default 10s).
	Timeout time.Duration `json:"timeout" yaml:"timeout"`
	// MaxAttempts bounds deliveries of one request (default 5).
	MaxAttempts int `json:"maxAttempts" yaml:"maxAttempts"`
}

// Replica identifies this replica among several (see docs/config.md).
type Replica struct {
	// ID names this replica. With approvals.store on PostgreSQL (the
	// shared mode) it is the replica's executor identity for durable
	// turns: a replica restarted with the same id takes up the turns it
	// left. Otherwise it prefixes the ids of the sessions and approvals
	// this replica owns.
	ID string `json:"id" yaml:"id"`
	// Peers maps the other replicas' ids to their base URLs; a request
	// for a session or approval another replica owns is forwarded there.
	// Deprecated: only without a PostgreSQL approvals.store (sessions in
	// each replica's memory); the shared mode ignores it.
	Peers map[string]string `json:"peers" yaml:"peers"`
	// LeaseTimeout (shared mode) is how long a replica may go without
	// renewing its lease before a surviving replica takes over its
	// unfinished turns (default 30s; renewed every sixth of it).
	LeaseTimeout time.Duration `json:"leaseTimeout" yaml:"leaseTimeout"`
	// SessionKeyFile (shared mode) names a file holding the key that
	// seals session values into the session store (AES-256-GCM, 32 bytes
	// as 64 hex digits or base64). The environment variable
	// AGENTHOST_SESSION_KEY may hold the key instead. Without a key,
	// session values are never stored.
	SessionKeyFile string `json:"sessionKeyFile" yaml:"sessionKeyFile"`
}

func validateServe(p *problem.List, s *Serve) {
	if s.Listen != "" {
		if _, _, err := net.SplitHostPort(s.Listen); err != nil {
			p.Add("serve.listen", "must be HOST:PORT (for example 127.0.0.1:8080)")
		}
	}
	if s.PublicURL != "" && !isHTTPURL(s.PublicURL) {
		p.Add("serve.publicURL", "must be an absolute http:// or https:// URL")
	}
	seen := map[string]string{}
	for i, id := range s.Identities {
		key := problem.Index("serve.identities", i)
		norm, err := ids.NormalizeID(id.Name)
		switch {
		case strings.TrimSpace(id.Name) == "":
			p.Add(problem.Key(key, "name"), "must not be empty")
		case err != nil:
			p.Add(problem.Key(key, "name"), "is not a valid identity name (it holds an invisible, default-ignorable or otherwise refused character; see docs/config.md, approvals)")
		case seen[norm] != "":
			p.Addf(problem.Key(key, "name"), "repeats the identity %q (names are compared normalised)", seen[norm])
		default:
			seen[norm] = id.Name
		}
		for j, pat := range id.Subjects {
			n, err := ids.NormalizeID(pat)
			switch {
			case glob.Validate(pat) != nil:
				p.Addf(problem.Index(problem.Key(key, "subjects"), j), "is not a valid pattern (%s)", glob.Syntax)
			case err != nil || n != pat:
				p.Add(problem.Index(problem.Key(key, "subjects"), j), "must be written in normalised form (lower case, no invisible characters): it is matched against normalised subjects")
			}
		}
		if id.Tenant != "" {
			if n, err := ids.NormalizeID(id.Tenant); err != nil || n == "" {
				p.Add(problem.Key(key, "tenant"), "is not a valid tenant name (it holds an invisible, default-ignorable or otherwise refused character)")
			}
		}
		if id.TokenSHA256 != "" {
			if b, err := hex.DecodeString(id.TokenSHA256); err != nil || len(b) != 32 {
				p.Add(problem.Key(key, "tokenSHA256"), "must be 64 hex digits (sha256sum of the token)")
			}
		} else if s.TLS.ClientCA == "" {
			p.Add(problem.Key(key, "tokenSHA256"), "is required unless serve.tls.clientCA is set (the identity could not authenticate)")
		}
		if len(id.Roles) == 0 {
			p.Add(problem.Key(key, "roles"), "must name at least one of api, approver")
		}
		for j, r := range id.Roles {
			if r != RoleAPI && r != RoleApprover {
				p.Add(problem.Index(problem.Key(key, "roles"), j), "must be api or approver")
			}
		}
	}
	if (s.TLS.Cert == "") != (s.TLS.Key == "") {
		p.Add("serve.tls", "set both cert and key, or neither")
	}
	if s.TLS.ClientCA != "" && s.TLS.Cert == "" {
		p.Add("serve.tls.clientCA", "needs serve.tls.cert and serve.tls.key (mutual TLS runs over HTTPS)")
	}
	for i, w := range s.Webhooks {
		key := problem.Index("serve.webhooks", i)
		if !isHTTPURL(w.URL) {
			p.Add(problem.Key(key, "url"), "must be an absolute http:// or https:// URL")
		}
		if w.Secret == "" {
			p.Add(problem.Key(key, "secret"), "is required (receivers verify the signature with it)")
		}
		if w.Timeout < 0 {
			p.Add(problem.Key(key, "timeout"), "must be positive")
		}
		if w.MaxAttempts < 0 {
			p.Add(problem.Key(key, "maxAttempts"), "must be positive")
		}
	}
	for _, n := range []struct {
		key string
		v   int64
	}{
		{"serve.maxSessions", int64(s.MaxSessions)},
		{"serve.maxSessionsPerIdentity", int64(s.MaxSessionsPerIdentity)},
		{"serve.maxApprovalStreamsPerIdentity", int64(s.MaxApprovalStreamsPerIdentity)},
		{"serve.readTimeout", int64(s.ReadTimeout)},
		{"serve.writeTimeout", int64(s.WriteTimeout)},
		{"serve.idleTimeout", int64(s.IdleTimeout)},
		{"serve.maxConnections", int64(s.MaxConnections)},
		{"serve.maxConnectionsPerClient", int64(s.MaxConnectionsPerClient)},
	} {
		if n.v < 0 {
			p.Add(n.key, "must be positive")
		}
	}
	for _, n := range []struct {
		key string
		v   int64
	}{
		{"serve.events.maxResultBytes", s.Events.MaxResultBytes},
		{"serve.events.maxSessionBytes", s.Events.MaxSessionBytes},
		{"serve.events.maxTotalBytes", s.Events.MaxTotalBytes},
	} {
		if n.v != 0 && n.v < MinLimitBytes {
			p.Addf(n.key, "must be at least %d bytes (0 or absent: the default)", MinLimitBytes)
		}
	}
	if len(s.Replica.Peers) > 0 && s.Replica.ID == "" {
		p.Add("serve.replica.id", "is required when serve.replica.peers is set")
	}
	if s.Replica.LeaseTimeout < 0 || (s.Replica.LeaseTimeout > 0 && s.Replica.LeaseTimeout < 2*time.Second) {
		p.Add("serve.replica.leaseTimeout", "must be at least 2s")
	}
	if strings.ContainsAny(s.Replica.ID, "-/ ") {
		p.Add("serve.replica.id", "must not contain '-', '/' or spaces (it prefixes ids)")
	}
	for _, name := range problem.SortedKeys(s.Replica.Peers) {
		if !isHTTPURL(s.Replica.Peers[name]) {
			p.Add(problem.Key("serve.replica.peers", name), "must be an absolute http:// or https:// URL")
		}
	}
}

// HasRole reports whether the identity holds role.
func (id Identity) HasRole(role string) bool { return slices.Contains(id.Roles, role) }

func (c *Config) expandServe(field func(string, *string)) {
	for i := range c.Serve.Webhooks {
		key := problem.Index("serve.webhooks", i)
		field(problem.Key(key, "url"), &c.Serve.Webhooks[i].URL)
		field(problem.Key(key, "secret"), &c.Serve.Webhooks[i].Secret)
	}
	field("serve.publicURL", &c.Serve.PublicURL)
}
