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
//
// Policies where SEP-3221 is silent:
//
//   - Overlap counts a secure name declared, required or admitted by a
//     pattern anywhere in inputSchema, at any depth, because the call-time
//     guard refuses a secure name at any depth of the arguments. Names
//     compare case-sensitively; a case or separator variant is a warning.
//   - secureInputSchema must declare its parameters in its top-level
//     properties: a name it requires or mentions only through allOf, $ref,
//     dependentSchemas and the like is an exclusion (the host could never
//     bind it). x-mcp-header is honoured only on top-level secure
//     properties; anywhere else in secureInputSchema it excludes the tool.
//   - Header names must be unique case-insensitively across both schemas.
//     x-mcp-header on a name that looks like a credential is a warning.
//   - Invalid x-mcp-header annotations in inputSchema exclude the tool on
//     every transport (mcp-go only drops them on Streamable HTTP).
//   - An embedded $id (below the root) in a schema that also uses $ref is
//     an exclusion: local references would depend on base-URI resolution.
//   - A number in either schema that the JSON Schema validator cannot
//     handle (internal/safeschema) is an exclusion (RuleNumber), and so is
//     a schema whose validation cost, unfolded through $ref and the in-place
//     applicators and multiplied per argument level, exceeds
//     MaxSchemaExpansion for one value (RuleExpansion). Tool.ValidationCost
//     lets the caller bound each call by MaxValidationWork.
//   - Validate compiles secureInputSchema once per Tool and caches it, so
//     an invalid JSON Schema is an exclusion at list time and the call path
//     never compiles.
package secureparams
