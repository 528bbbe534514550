package host

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/closer"
)

// openAudit is the audit sink: Options.Audit, else audit.path's file
// (a sink that discards and warns once when the path is empty) beside
// audit.store's database (Options.AuditDatabase, alone when audit.path is
// empty), then Options.AuditAlso. It pushes the file on owned. unrecorded
// is the sink when it records nothing.
func openAudit(cfg *config.Config, opts Options, logger *slog.Logger, owned *closer.Stack) (sink auditlog.Sink, unrecorded *unrecordedSink, err error) {
	sink, db := opts.Audit, opts.AuditDatabase
	switch {
	case sink != nil:
	case db == nil && cfg.Audit.Store != "":
		return nil, nil, notOpened("audit.store", "AuditDatabase")
	case db != nil && cfg.Audit.Path == "":
		sink = db // the database is the record; nothing to warn about
	default:
		file, err := auditlog.OpenSinkWith(cfg.Audit.Path, auditlog.FileSinkOptions{OnGap: func(g auditlog.Gap) {
			logger.Warn("the audit file was "+g.Reason+" while in use; reopened it and recorded the gap",
				"path", g.Path, "since", g.Since, "records", g.Records)
		}})
		if err != nil {
			return nil, nil, &Error{Kind: KindConfig, Message: fmt.Sprintf("audit.path: %v", err), Err: err}
		}
		owned.Push(closer.Logged{Closer: file, Logger: logger, Message: "closing the audit log failed"})
		switch {
		case db != nil:
			sink = auditlog.MultiSink{file, db}
		case cfg.Audit.Path == "":
			// Said when it matters: at the first decision, so commands
			// that never call a tool do not warn.
			unrecorded = &unrecordedSink{Sink: file, logger: logger}
			sink = unrecorded
		default:
			sink = file
		}
	}
	if opts.AuditAlso != nil {
		sink = alsoSink{Sink: sink, also: opts.AuditAlso}
	}
	return sink, unrecorded, nil
}

// approvalStore is Options.ApprovalStore; a config naming approvals.store
// without one is a configuration error, never a silent in-memory fallback.
func approvalStore(cfg *config.Config, opts Options) (approvals.Store, error) {
	if opts.ApprovalStore == nil && cfg.Approvals.Store != "" {
		return nil, notOpened("approvals.store", "ApprovalStore")
	}
	return opts.ApprovalStore, nil
}

// notOpened is the error for a config that names a store the program did
// not open.
func notOpened(key, field string) error {
	return configErr(fmt.Errorf("%s names a database, but this program opens none: build the host with compose.New and compose.Options.Databases (approvals/stores.Databases opens SQLite and PostgreSQL), or pass host.Options.%s (docs/config.md)", key, field))
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
const EnvAuditKey = "AGENTHOST_AUDIT_KEY"

// AuditChainKey reads the key of audit.store's chain (docs/audit.md): the
// text of AGENTHOST_AUDIT_KEY, or the content of audit.chainKeyFile (a
// final newline removed); nil when neither is set. Both set, an
// unreadable file or a key shorter than auditlog.MinChainKeyBytes is a
// config error (KindConfig) that never quotes the key. getenv is
// os.Getenv when nil.
func AuditChainKey(cfg *config.Config, getenv func(string) string) ([]byte, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	env, file := getenv(EnvAuditKey), cfg.Audit.ChainKeyFile
	var key []byte
	var from string
	switch {
	case env != "" && file != "":
		return nil, configErr(fmt.Errorf("both %s and audit.chainKeyFile name an audit chain key: set one", EnvAuditKey))
	case env != "":
		key, from = []byte(env), EnvAuditKey
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is named below
			}
			return nil, configErr(fmt.Errorf("audit.chainKeyFile %s: %w", file, err))
		}
		key, from = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")), "audit.chainKeyFile "+file
	default:
		return nil, nil
	}
	if len(key) < auditlog.MinChainKeyBytes {
		return nil, configErr(fmt.Errorf("the audit chain key in %s is %d bytes, fewer than %d (openssl rand -hex 32 makes one)", from, len(key), auditlog.MinChainKeyBytes))
	}
	return key, nil
}

func configErr(err error) error {
	return &Error{Kind: KindConfig, Message: err.Error(), Err: err}
}
