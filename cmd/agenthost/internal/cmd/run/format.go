package run

import (
	"fmt"
	"io"
	"strings"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// outputFormat is how `run` prints a turn (--output-format, docs/cli.md).
// It is parsed once, when the flag is read; everything after branches on
// the typed value.
type outputFormat int

const (
	// formatText: assistant text on stdout, tool activity on stderr.
	formatText outputFormat = iota
	// formatJSON: one object at the end, Claude Code's result (the last
	// stream-json line, host/ccstream).
	formatJSON
	// formatStreamJSON: Claude Code's stream-json lines as the turn runs
	// (host/ccstream).
	formatStreamJSON
	// formatAgentStreamJSON: one agenthost event (host.Event) per line as
	// the turn runs, what stream-json printed before it took Claude
	// Code's shape.
	formatAgentStreamJSON
	// formatAgentJSON: one object at the end, agenthost's session_end
	// event with the final assistant text always in "result": what json
	// printed before it took Claude Code's shape.
	formatAgentJSON
)

// outputFormatNames are the flag's values, indexed by outputFormat.
var outputFormatNames = [...]string{
	formatText:            "text",
	formatJSON:            "json",
	formatStreamJSON:      "stream-json",
	formatAgentStreamJSON: "agenthost-stream-json",
	formatAgentJSON:       "agenthost-json",
}

// parseOutputFormat reads a --output-format value; the error lists the
// valid ones (the flag parser names the value and the flag).
func parseOutputFormat(s string) (outputFormat, error) {
	for f, name := range outputFormatNames {
		if s == name {
			return outputFormat(f), nil
		}
	}
	return formatText, fmt.Errorf("want one of %s", strings.Join(outputFormatNames[:], ", "))
}

// String, Set and Type make *outputFormat a pflag.Value, so a bad value is
// refused while flags are parsed (exit code 2), before any config is read.
func (f outputFormat) String() string {
	if f < 0 || int(f) >= len(outputFormatNames) {
		return fmt.Sprintf("outputFormat(%d)", int(f))
	}
	return outputFormatNames[f]
}

func (f *outputFormat) Set(s string) error {
	v, err := parseOutputFormat(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

func (f *outputFormat) Type() string { return "format" }

// printJSONEvent prints an event in --output-format agenthost-json or
// agenthost-stream-json, one line, HTML characters as they are (as
// printEvents prints them).
func printJSONEvent(w io.Writer, e host.Event, format outputFormat) {
	// Both agenthost formats leave the streamed pieces out (docs/events.md),
	// as run's one-shot output does.
	if e.Type == host.EventAssistantDelta || format == formatAgentJSON && e.Type != host.EventSessionEnd {
		return
	}
	var v any = e
	if format == formatAgentJSON { // result is always present, even when empty
		v = struct {
			host.Event
			Result string `json:"result"`
		}{e, e.Result}
	}
	_ = cmdutil.WriteJSONLine(w, v)
}
