// Package approvals owns the SEP-2793 risk model of agenthost and everything
// that decides whether a tool call may run.
//
// It covers, in the order a call meets them:
//
//   - risk metadata: parsing server-declared annotations,
//     normalisation, and the effective metadata of a tool with per-field
//     provenance ([Policy.Effective]): operator catalogue, then trusted
//     declarations, then inference ([Inferrer]), then the fail-closed bucket
//     ([FailClosed]); untrusted declarations may only raise risk; the
//     Tool Annotations working group's action-metadata maps into the same
//     fields (source [SourceActionMetadata]) and trust-annotations labels
//     results ([ResultLabelsOf]), both read in vocab.go and labels.go;
//   - policy: rules combined deny > ask > allow, trust gating, call-time
//     escalators that only raise ([Policy.Decide], [Policy.NeverAllowed],
//     [Policy.Explain]) and an inferred, reviewable catalogue
//     ([Policy.Catalogue], [WriteCatalogueYAML]);
//   - approvers behind one interface ([Approver]): [Deny], [Auto], a terminal
//     [Prompt] and a pending-approvals [Queue] for chat backends;
//   - the approvals [Store] that keeps requests, votes, outcomes and session
//     grants where every replica sees them ([MemStore] here; SQLite and
//     PostgreSQL in the sqlitestore and pgstore sub-packages, which this
//     package does not import), the one place the quorum rules live
//     ([CastVote]), and [StoreApprover] (`--approve wait`);
//   - the per-session [Gate] that combines a decision, session grants
//     ("allow for this session"), the session's memory of refused calls
//     and an approver into a final [Outcome], and the text the model is
//     told when a call does not run ([ModelMessage]);
//   - audit records ([Record]) and sinks ([Sink], [FileSink]).
//
// Nothing here talks to MCP servers or models: the host hands in raw tool
// definitions and arguments and gets decisions back.
//
// Decisions where SEP-2793 and the design notes are silent:
//
//   - Catalogue entries: the first entry (in config order) whose server and
//     tool globs match wins; fields it leaves out fall through. Globs: *
//     (any run, including / and .), ?, [a-z], [!a-z], backslash escapes.
//   - minTrustLevel must be an integer value in 1..5 (3.0 counts, the
//     string "3" does not); anything else is 5.
//   - Consistency floors raise riskLevel: destroy => high, delete =>
//     medium, data_exfiltration or privilege_change side effects => high.
//     They apply to every source, the catalogue included.
//   - destructiveHint true declares riskLevel high and category mutate;
//     readOnlyHint true (without destructiveHint) declares read, low, auto;
//     both only where the SEP-2793 field is absent, and for untrusted
//     servers only as raises.
//   - action-metadata (vocab.go): for a trusted server it stands in for the
//     SEP-2793 fields left out; for any other each implied value raises
//     only, after the SEP-2793 declaration's raise. Unknown classifier
//     values map to nothing; labels (trust-annotations, returnMetadata) are
//     taken from every server, since they only add caution.
//   - Inference: destroy, drop, purge, truncate and wipe mean
//     destroy/critical; a name with non-ASCII characters or without a known
//     verb is not inferred; single-letter flags (-f, -r) are not risky
//     flags; extra verbs from the config can raise a built-in verb, never
//     lower it.
//     Unset fields are derived from the effective category and risk:
//     reversibility (read/observe/utility auto, mutate manual, delete and
//     destroy none), approvalRecommendation (low none, medium and high
//     single, critical multi), minTrustLevel (low 1, medium 2, high 3,
//     critical 4; 5 is left to the unclassified bucket).
//   - An ask needs max(matching ask rules' approvers, 1 for none/single or 2
//     for multi) distinct approvers, capped by maxApprovers (default 10);
//     its timeout is the shortest among the matching ask rules, else
//     approvals.timeout, else 5 minutes.
//   - Auto is one approver ("auto"); a terminal Prompt is one approver.
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
