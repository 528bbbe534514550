package host

import (
	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/auditsink"
	"github.com/agenthost/agenthost/host/internal/hosterr"
)

// approvalStore is Options.ApprovalStore; a config naming approvals.store
// without one is a configuration error, never a silent in-memory fallback.
func approvalStore(cfg *config.Config, opts Options) (approvals.Store, error) {
	if opts.ApprovalStore == nil && cfg.Approvals.Store != "" {
		return nil, hosterr.NotOpened("approvals.store", "ApprovalStore")
	}
	return opts.ApprovalStore, nil
}

// ApprovalStore is the store approval requests and session grants are kept
// in (approvals.store, or Options.ApprovalStore); nil when neither is set
// and every session keeps its own grants.
func (h *Host) ApprovalStore() approvals.Store { return h.store }

// grantStore is where sessions keep their grants: the shared store when
// one is configured, else nil (each session's Gate keeps its own).
func (h *Host) grantStore() approvals.GrantStore {
	if h.store == nil {
		return nil
	}
	return h.store
}

// EnvAuditKey is the environment variable that holds the audit chain key
// (instead of audit.chainKeyFile).
const EnvAuditKey = auditsink.EnvKey

// AuditChainKey reads the key of audit.store's chain (docs/audit.md): the
// text of AGENTHOST_AUDIT_KEY, or the content of audit.chainKeyFile (a
// final newline removed); nil when neither is set. Both set, an
// unreadable file or a key shorter than auditlog.MinChainKeyBytes is a
// config error (KindConfig) that never quotes the key. getenv is
// os.Getenv when nil.
func AuditChainKey(cfg *config.Config, getenv func(string) string) ([]byte, error) {
	return auditsink.ChainKey(cfg, getenv)
}
