// Package auditlog owns the audit log of agenthost: the record of every
// call's decision and result ([Record], built from the gate's result by
// [NewRecord]), its hand-written JSON encoding, the sinks that keep it
// ([Sink]: [FileSink] with its identity checks and fsync batching,
// [WriterSink], [MultiSink], [SinkFunc], [Discard]), and the hash chain
// over records with its verification ([ChainHash], [ChainMAC],
// [ChainVerifier], [VerifyChains]). docs/audit.md is its reference.
//
// It stands above package approvals (it records the gate's results); the
// database sinks live with the stores (approvals/internal/sqlstore).
package auditlog
