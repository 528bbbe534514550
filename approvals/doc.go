// Package approvals owns the decision flow of a tool call once the rules
// have spoken, and the store its approvals live in.
//
// It covers, in the order a call meets them:
//
//   - the per-session [Gate] that combines a rules decision
//     ([rules.Policy.Decide]), session grants ("allow for this session"),
//     the session's memory of refused calls and an approver into a final
//     [Result], and the text the model is told when a call does not run
//     ([ModelMessage]);
//   - approvers behind one interface ([Approver]): [Deny], [Auto] and a
//     pending-approvals [Queue] for chat backends (the terminal prompt is
//     the CLI's); the answer modes that choose among them for a session
//     (the CLI's --approve, Claude Code's permission modes, how auto
//     answers servers' questions) are the sub-package answermode;
//   - the approvals [Store] that keeps requests, votes, outcomes and
//     session grants where every replica sees them ([MemStore] here;
//     SQLite and PostgreSQL in the sqlitestore and pgstore sub-packages,
//     which this package does not import), the one place the quorum rules
//     live ([CastVote]), and [StoreApprover] (`--approve wait`).
//
// Its neighbours own the rest: [risk] the risk model and inference, [rules]
// the rules and their explanation, auditlog the audit records and sinks
// (it records this package's results, so it stands above it), policyinit
// the `policy init` generation.
//
// Nothing here talks to MCP servers or models: the host hands in raw tool
// definitions and arguments and gets decisions back.
//
// Decisions where SEP-2793 and the design notes are silent:
//
//   - Auto is one approver ("auto"); a terminal prompt is one approver.
//     An ask needing more than the approver can supply is rejected with
//     reason no_approver, without asking. End of terminal input is
//     no_approver too.
//   - Queue: any deny vetoes (even after the same approver allowed); a
//     repeated allow counts once (ErrDuplicateVote); the requester (the
//     subject, or Request.RequestedBy) cannot vote (ErrSelfApproval); ids
//     are compared under one profile (NormalizeID, ids.go), and an id it
//     refuses cannot vote (ErrInvalidApproverID); the first resolution wins
//     and later votes get ErrAlreadyResolved.
//   - The model is told the class of reason and, for policy denials and
//     approver refusals, the human-written note (rule message or approver
//     note), sanitised and capped at 200 characters; never rule ids or
//     approver ids. Refused asks (rejected, expired) are remembered per
//     session by (server, tool, definition hash, canonical arguments).
package approvals
