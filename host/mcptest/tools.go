package mcptest

import "github.com/agenthost/agenthost/host/mcptest/internal/toolset"

// Behaviour is the "x-test" object of a tool definition (the package
// comment lists its members). It is stripped before the tool is served.
type Behaviour = toolset.Behaviour

// ProgressStep is one notifications/progress of a Behaviour.
type ProgressStep = toolset.ProgressStep

// TaskBehaviour is the "task" member of x-test: the tool's calls run as
// tasks of the Tasks extension, stepped deterministically by tasks/get
// (its fields say how; see host/mcptest/internal/toolset).
type TaskBehaviour = toolset.TaskBehaviour

// Probes a tool's x-test "probe" runs with the call's arguments: what a
// sandbox test asks a real server process to try. Each answers what
// happened as text; a refusal is a tool error.
const (
	ProbeDial     = toolset.ProbeDial     // a TCP connection to arguments.addr
	ProbeSpawn    = toolset.ProbeSpawn    // arguments.count background `sleep 60` processes
	ProbeAllocate = toolset.ProbeAllocate // allocate and touch arguments.mib MiB
	ProbeRead     = toolset.ProbeRead     // read the file arguments.path, answer its content
)
