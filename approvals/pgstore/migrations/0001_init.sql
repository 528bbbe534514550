-- Approval requests: the whole request as JSON (approvals.Approval's
-- form) in doc, and the columns the queries select on.
CREATE TABLE agenthost_approvals (
    id          text PRIMARY KEY,
    state       text NOT NULL,
    session_id  text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    settled_at  timestamptz,
    doc         text NOT NULL
);
CREATE INDEX agenthost_approvals_open ON agenthost_approvals (created_at, id) WHERE state = 'pending';
CREATE INDEX agenthost_approvals_settled ON agenthost_approvals (settled_at DESC) WHERE state <> 'pending';

-- Session grants ("allow for this session").
CREATE TABLE agenthost_grants (
    session_id  text NOT NULL,
    server      text NOT NULL,
    tool        text NOT NULL,
    created_at  timestamptz NOT NULL,
    doc         text NOT NULL,
    PRIMARY KEY (session_id, server, tool)
);

-- Audit records as a hash chain: each row carries the previous record's
-- hash; the head row holds the chain's last position and hash.
CREATE TABLE agenthost_audit (
    chain      text NOT NULL,
    seq        bigint NOT NULL,
    ts         timestamptz NOT NULL,
    session_id text NOT NULL,
    prev_hash  text NOT NULL,
    hash       text NOT NULL,
    record     text NOT NULL,
    PRIMARY KEY (chain, seq)
);
CREATE INDEX agenthost_audit_session ON agenthost_audit (session_id, ts);
CREATE TABLE agenthost_audit_heads (
    chain  text PRIMARY KEY,
    seq    bigint NOT NULL,
    hash   text NOT NULL
);
