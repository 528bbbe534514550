// Package failpoint owns the test-only crash points of the durable turn:
// named places where a test stops the process as SIGKILL would (between a
// call's decision record and its send, between the send and its result,
// between the result and the conversation append), to check that each
// ends in its documented outcome (docs/durable.md).
//
// Only a binary built with the build tag failpoints has them: there, Hit
// kills the process with SIGKILL when the environment variable
// AGENTHOST_FAILPOINT names the point. Without the tag (every production
// build) Hit is an empty function the compiler drops: no variable is read,
// nothing can stop the process.
package failpoint

// Env names the crash point a failpoints binary stops at.
const Env = "AGENTHOST_FAILPOINT"

// The crash points of a durable call, in the order a call passes them.
const (
	// DurableAfterDecision: the call's decision record is written, its
	// send is not yet counted in the send ledger.
	DurableAfterDecision = "durable-after-decision"
	// DurableAfterLedger: the send is counted, the request has not left.
	DurableAfterLedger = "durable-after-ledger"
	// DurableAfterSend: the server answered, the call's step has not
	// checkpointed the result.
	DurableAfterSend = "durable-after-send"
	// DurableAfterResult: the calls' results are checkpointed, the
	// conversation does not hold them yet.
	DurableAfterResult = "durable-after-result"
)
