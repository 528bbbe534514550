package mcptest

import "github.com/agenthost/agenthost/host/mcptest/internal/record"

// Directions of a Recorded message.
const (
	DirIn  = record.DirIn
	DirOut = record.DirOut
)

// Recorded is one message as it crossed the wire (Time, Dir, Transport,
// HTTPMethod and Headers for HTTP, the raw Message, Invalid when it was not
// JSON, and its Method). Secure values are kept on purpose: tests assert
// what the host sent.
type Recorded = record.Recorded

// Recording keeps every message in memory (Messages, Sent, WaitFor,
// Reset) and, with Options.RecordFile, appends them to a file, one JSON
// line each, written with a single write so lines never tear.
type Recording = record.Recording
