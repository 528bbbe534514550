// Package modeltest is a scripted OpenAI-compatible chat-completions server for
// the project's unit and e2e tests. Each POST /v1/chat/completions (or
// /chat/completions) request is answered by the next Step of a Script: text,
// one or several tool calls, an HTTP error, a delay or a hang, in the JSON or
// SSE wire format go-openai reads. Every request is recorded raw (and
// optionally appended as JSON lines to a file) so tests can assert on what
// the host sent: the tools payload, the transcript, the absence of canaries.
//
// Besides the script's own expectations, every request is checked the way
// OpenAI would check it (tool messages answer tool calls of the immediately
// preceding assistant message, each exactly once; a model is named;
// stream_options only with stream; the API key when one is configured).
// Violations do not change the answer (except a wrong API key, which gets
// 401 like the real API); they are recorded and returned by Failures, so a
// broken host is caught even when the script does not ask.
//
// Decisions where the brief is silent:
//
//   - A step with neither text nor toolCalls (e.g. only a delay) answers an
//     empty assistant message with finish_reason "stop".
//   - "body" of an error step is sent verbatim when it is valid JSON, and is
//     otherwise the message of the generated OpenAI error object.
//   - "hang" on a streaming request first streams the step's text and tool
//     calls (without finish_reason or [DONE]), so tests can cancel mid-stream.
//   - Tool calls without an "id" get "call_<step>_<index>" (both 0-based).
//   - A request rejected before reaching the model (wrong path or method,
//     unparseable body, wrong API key) consumes no step.
//   - Recorded Authorization and Api-Key headers are redacted: the recording
//     is test output, and keys do not belong in it.
package modeltest
