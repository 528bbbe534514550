-- Approval requests: the whole request as JSON (approvals.Approval's
-- form) in doc, and the columns the queries select on. Times are Unix
-- nanoseconds.
CREATE TABLE agenthost_approvals (
    id          TEXT PRIMARY KEY,
    state       TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    settled_at  INTEGER,
    doc         TEXT NOT NULL
);
CREATE INDEX agenthost_approvals_state ON agenthost_approvals (state, created_at, id);

-- Session grants ("allow for this session").
CREATE TABLE agenthost_grants (
    session_id  TEXT NOT NULL,
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    doc         TEXT NOT NULL,
    PRIMARY KEY (session_id, server, tool)
);

-- Audit records as a hash chain: each row carries the previous record's
-- hash; the head row holds the chain's last position and hash.
CREATE TABLE agenthost_audit (
    chain      TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    ts         INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (chain, seq)
);
CREATE INDEX agenthost_audit_session ON agenthost_audit (session_id, ts);
CREATE TABLE agenthost_audit_heads (
    chain  TEXT PRIMARY KEY,
    seq    INTEGER NOT NULL,
    hash   TEXT NOT NULL
);
