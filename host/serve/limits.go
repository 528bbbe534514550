package serve

import (
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
)

// Defaults of the serve section's bounds (docs/config.md, "serve").
const (
	defaultMaxSessions            = 10_000
	defaultMaxSessionsPerIdentity = 1_000
	defaultMaxApprovalStreams     = 100
	defaultReadTimeout            = 30 * time.Second
	defaultWriteTimeout           = 60 * time.Second
	defaultIdleTimeout            = 30 * time.Second
	defaultMaxConnections         = 4096
	defaultMaxConnectionsPerIP    = 256
	defaultMaxSessionEventBytes   = 16 << 20
	defaultMaxTotalEventBytes     = 512 << 20
	// readHeaderTimeout bounds reading a request's head.
	readHeaderTimeout = 10 * time.Second
)

// limits are the serve section's bounds with the defaults filled in.
type limits struct {
	maxSessions, maxSessionsPerIdentity int
	maxApprovalStreams                  int
	readTimeout, writeTimeout           time.Duration
	idleTimeout                         time.Duration
	maxConns, maxConnsPerClient         int
	events                              eventlog.Limits
}

// resolveLimits fills in the defaults of cfg; modelResult is the host's
// limits.maxModelResultBytes, the default bound of one tool result.
func resolveLimits(cfg *config.Serve, modelResult int64) limits {
	l := limits{
		maxSessions:            orDefault(cfg.MaxSessions, defaultMaxSessions),
		maxSessionsPerIdentity: orDefault(cfg.MaxSessionsPerIdentity, defaultMaxSessionsPerIdentity),
		maxApprovalStreams:     orDefault(cfg.MaxApprovalStreamsPerIdentity, defaultMaxApprovalStreams),
		readTimeout:            orDefault(cfg.ReadTimeout, defaultReadTimeout),
		writeTimeout:           orDefault(cfg.WriteTimeout, defaultWriteTimeout),
		idleTimeout:            orDefault(cfg.IdleTimeout, defaultIdleTimeout),
		maxConns:               orDefault(cfg.MaxConnections, defaultMaxConnections),
		maxConnsPerClient:      orDefault(cfg.MaxConnectionsPerClient, defaultMaxConnectionsPerIP),
		events: eventlog.Limits{
			MaxResult:  orDefault(cfg.Events.MaxResultBytes, orDefault(modelResult, config.DefaultMaxModelResultBytes)),
			MaxSession: orDefault(cfg.Events.MaxSessionBytes, defaultMaxSessionEventBytes),
			MaxTotal:   orDefault(cfg.Events.MaxTotalBytes, defaultMaxTotalEventBytes),
		},
	}
	l.maxSessionsPerIdentity = min(l.maxSessionsPerIdentity, l.maxSessions)
	l.maxConnsPerClient = min(l.maxConnsPerClient, l.maxConns)
	l.events.MaxSession = min(l.events.MaxSession, l.events.MaxTotal)
	return l
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
