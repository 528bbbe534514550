// Package secureparams owns the host-side rules of SEP-3221 (secure
// parameters, extension io.modelcontextprotocol/secure-params) as pure
// functions with no I/O:
//
//   - ParseTool keeps a tool definition exactly as it came off the wire
//     (mcp-go drops secureInputSchema and unknown annotation fields) and
//     extracts what the host needs: secure parameter names, required names,
//     x-mcp-header bindings, a stable definition hash.
//   - Validate decides whether the tool may be offered at all. A tool that
//     breaks a rule is excluded (never the whole server) with an
//     *ExclusionError whose Reason is a short sentence for operators.
//   - FindSecureNames and CheckArguments guard the model's arguments: a secure
//     parameter name anywhere in them is a possible prompt injection.
//   - CompileSecureSchema, ValueSchema.Validate, Coerce and Select check the
//     host-bound values against secureInputSchema before anything is sent,
//     with errors that never contain a value.
//
// Everything is fail-closed: a schema the package cannot reason about
// (external or dynamic references, uncompilable patterns, excessive depth or
// size, duplicate keys) excludes the tool rather than being guessed at.
package secureparams
