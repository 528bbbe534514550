// Package hooks owns agenthost's tool-call hooks: external commands run
// before a tool call (PreToolUse: they may deny it, ask a person about it,
// or add context for the model) and after it (PostToolUse: they may
// withhold or replace the result the model sees), in the input and output
// JSON of Claude Code's hooks, so an existing Claude Code hook script works
// unchanged. docs/config.md describes the configuration and every
// difference from Claude Code.
//
// The package knows nothing of the host: it is given a call (server, tool,
// the model's arguments, the names of the secure parameters) and returns a
// verdict. It never sees secure values. The host turns verdicts into
// decisions, and a hook can only tighten them: "allow" changes nothing,
// "ask" raises an allowed call to an approval, "deny" denies, and a hook
// that fails (times out, crashes, answers malformed JSON) denies.
//
// Hooks run as child processes with the child environment of package
// childproc (the host's API keys never reach them), in a process group of
// their own; their whole tree (childproc.KillGroupTree) is killed on
// timeout, and after they exit when anything of their group is left. With
// a supervisor (Options.Supervisor, the agenthost CLI's) a hook runs under
// it, which ends the hook's whole tree when the hook exits and when the
// host dies, also what called setsid and lost its parent. A hook with a
// sandbox block (Hook.Sandbox) runs only under a supervisor, which applies
// the sandbox before it starts the hook (childproc.Supervisor.WrapSandboxed). A
// command run directly is resolved once (childproc.LookPath), and a pinned
// one runs from the sealed copy of the bytes that were hashed
// (childproc.OpenPinned).
package hooks
