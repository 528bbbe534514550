package host

import (
	"crypto/sha256"
	"encoding/hex"
)

// TaskQuestionRule is recorded among the rules of the decision a task's
// question asked for (the approval event's and the audit record's): the
// server's question, not a rule of the policy, raised the ask.
const TaskQuestionRule = "task-question"

// questionKey stands for the tool's definition hash in the gate's check
// of a task's question, so that neither the call's session grant nor its
// remembered refusals answer the question, and a refused question is
// remembered for that question only.
func questionKey(defHash, question string) string {
	sum := sha256.Sum256([]byte(question))
	return defHash + "/" + TaskQuestionRule + "/" + hex.EncodeToString(sum[:8])
}
