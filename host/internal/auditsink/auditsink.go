// Package auditsink owns the host's audit sink as the configuration
// builds it (the file of audit.path, audit.store's database, the sink an
// embedder passes and the one it adds), the warning of a host that records
// nothing, and the key of audit.store's hash chain.
package auditsink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/closer"
	"github.com/agenthost/agenthost/host/internal/hosterr"
)

// Open is the audit sink: audit (Options.Audit), else audit.path's file
// (a sink that discards and warns once when the path is empty) beside
// audit.store's database (db, Options.AuditDatabase, alone when audit.path is
// empty), then also (Options.AuditAlso). It pushes the file on owned. unrecorded
// is the sink when it records nothing.
func Open(cfg *config.Config, audit, db, also auditlog.Sink, logger *slog.Logger, owned *closer.Stack) (sink auditlog.Sink, unrecorded *Unrecorded, err error) {
	sink = audit
	switch {
	case sink != nil:
	case db == nil && cfg.Audit.Store != "":
		return nil, nil, hosterr.NotOpened("audit.store", "AuditDatabase")
	case db != nil && cfg.Audit.Path == "":
		sink = db // the database is the record; nothing to warn about
	default:
		file, err := auditlog.OpenSinkWith(cfg.Audit.Path, auditlog.FileSinkOptions{OnGap: func(g auditlog.Gap) {
			logger.Warn("the audit file was "+g.Reason+" while in use; reopened it and recorded the gap",
				"path", g.Path, "since", g.Since, "records", g.Records)
		}})
		if err != nil {
			return nil, nil, &hosterr.Error{Kind: hosterr.KindConfig, Message: fmt.Sprintf("audit.path: %v", err), Err: err}
		}
		owned.Push(closer.Logged{Closer: file, Logger: logger, Message: "closing the audit log failed"})
		switch {
		case db != nil:
			sink = auditlog.MultiSink{file, db}
		case cfg.Audit.Path == "":
			// Said when it matters: at the first decision, so commands
			// that never call a tool do not warn.
			unrecorded = &Unrecorded{Sink: file, logger: logger}
			sink = unrecorded
		default:
			sink = file
		}
	}
	if also != nil {
		sink = alsoSink{Sink: sink, also: also}
	}
	return sink, unrecorded, nil
}

// Unrecorded stands for an empty audit.path: records are discarded, and
// the first one warns once that decisions are not recorded.
type Unrecorded struct {
	auditlog.Sink
	logger *slog.Logger
	once   sync.Once
}

// Write discards r, warning at the first record.
func (u *Unrecorded) Write(ctx context.Context, r *auditlog.Record) error {
	u.Warn()
	return u.Sink.Write(ctx, r)
}

// Warn logs, once, that decisions are not recorded.
func (u *Unrecorded) Warn() {
	u.once.Do(func() {
		u.logger.Warn("audit.path is empty: tool-call decisions are not recorded (set audit.path; see docs/config.md)")
	})
}

// alsoSink writes each record to Sink, then to also; Close closes Sink only.
type alsoSink struct {
	auditlog.Sink
	also auditlog.Sink
}

func (a alsoSink) Write(ctx context.Context, r *auditlog.Record) error {
	if err := a.Sink.Write(ctx, r); err != nil {
		return err
	}
	return a.also.Write(ctx, r)
}

// Err reports the first sink's sticky failure, as an unwrapped sink would.
func (a alsoSink) Err() error {
	if fr, ok := a.Sink.(auditlog.FailureReporter); ok {
		return fr.Err()
	}
	return nil
}

// EnvKey is the environment variable that holds the audit chain key
// (instead of audit.chainKeyFile).
const EnvKey = "AGENTHOST_AUDIT_KEY"

// ChainKey reads the key of audit.store's chain (docs/audit.md): the
// text of AGENTHOST_AUDIT_KEY, or the content of audit.chainKeyFile (a
// final newline removed); nil when neither is set. Both set, an
// unreadable file or a key shorter than auditlog.MinChainKeyBytes is a
// config error (KindConfig) that never quotes the key. getenv is
// os.Getenv when nil.
func ChainKey(cfg *config.Config, getenv func(string) string) ([]byte, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	env, file := getenv(EnvKey), cfg.Audit.ChainKeyFile
	var key []byte
	var from string
	switch {
	case env != "" && file != "":
		return nil, hosterr.Config(fmt.Errorf("both %s and audit.chainKeyFile name an audit chain key: set one", EnvKey))
	case env != "":
		key, from = []byte(env), EnvKey
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is named below
			}
			return nil, hosterr.Config(fmt.Errorf("audit.chainKeyFile %s: %w", file, err))
		}
		key, from = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")), "audit.chainKeyFile "+file
	default:
		return nil, nil
	}
	if len(key) < auditlog.MinChainKeyBytes {
		return nil, hosterr.Config(fmt.Errorf("the audit chain key in %s is %d bytes, fewer than %d (openssl rand -hex 32 makes one)", from, len(key), auditlog.MinChainKeyBytes))
	}
	return key, nil
}

// Redacting is the sink the call pipeline writes its records to: each
// record goes to Sink with the model's arguments passed through Redactor
// (a secret a user pasted into the conversation must not land in the audit
// log verbatim; a result record copies its redacted decision record), and
// a cancelled call's record is still written. Close closes nothing: Sink
// is closed by its owner.
type Redacting struct {
	Sink     auditlog.Sink
	Redactor *bindings.Redactor
}

// Write writes rec to r.Sink, its arguments masked.
func (r Redacting) Write(ctx context.Context, rec *auditlog.Record) error {
	if rec.Phase != auditlog.PhaseResult {
		rec.Arguments = r.Redactor.RedactJSON(rec.Arguments)
	}
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	return r.Sink.Write(ctx, rec)
}

// Close does nothing: the sink's owner closes it.
func (r Redacting) Close() error { return nil }
