package host

import "github.com/agenthost/agenthost/host/internal/taskq"

// TaskQuestionRule is recorded among the rules of the decision a task's
// question asked for (the approval event's and the audit record's): the
// server's question, not a rule of the policy, raised the ask.
const TaskQuestionRule = taskq.Rule
