package eventlog

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/jsonenc"
)

// appendEventJSON appends e as JSON, byte for byte what json.Marshal(e)
// gives (field order, omitempty, HTML-safe string escaping, compacted raw
// arguments), without reflection: a served turn encodes every event once
// and this was the largest share of what serve adds to a turn. An error is
// what json.Marshal would fail with (arguments that are not JSON, a
// content block that cannot be encoded); dst is then returned as it came.
//
// Every field of host.Event must be handled here: TestEventJSONKnowsEveryField
// fails when one is added, and the differential tests and FuzzEventJSON
// compare the output with json.Marshal.
func appendEventJSON(dst []byte, e *host.Event) ([]byte, error) {
	orig := len(dst)
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, string(e.Type))
	dst = appendStringField(dst, `,"sessionId":`, e.SessionID)
	dst = appendIntField(dst, `,"step":`, e.Step)
	dst = appendStringField(dst, `,"text":`, e.Text)
	dst = appendStringField(dst, `,"callId":`, e.CallID)
	dst = appendStringField(dst, `,"exposedName":`, e.ExposedName)
	dst = appendStringField(dst, `,"server":`, e.Server)
	dst = appendStringField(dst, `,"tool":`, e.Tool)
	if len(e.Arguments) > 0 {
		dst = append(dst, `,"arguments":`...)
		var err error
		if dst, err = appendRawJSON(dst, e.Arguments); err != nil {
			return dst[:orig], err
		}
	}
	dst = appendStringField(dst, `,"decision":`, e.Decision)
	dst = appendStringField(dst, `,"outcome":`, e.Outcome)
	if e.Approvers != nil {
		dst = append(dst, `,"approvers":`...)
		dst = strconv.AppendInt(dst, int64(*e.Approvers), 10)
	}
	dst = appendStringField(dst, `,"explanation":`, e.Explanation)
	dst = appendStringField(dst, `,"approvalId":`, e.ApprovalID)
	dst = appendStringField(dst, `,"deadline":`, e.Deadline)
	dst = appendStringField(dst, `,"riskLevel":`, e.RiskLevel)
	dst = appendFloatField(dst, `,"progress":`, e.Progress)
	dst = appendFloatField(dst, `,"total":`, e.Total)
	if e.IsError != nil {
		dst = append(dst, `,"isError":`...)
		dst = strconv.AppendBool(dst, *e.IsError)
	}
	if len(e.Content) > 0 {
		dst = append(dst, `,"content":[`...)
		for i, c := range e.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendContentJSON(dst, c); err != nil {
				return dst[:orig], err
			}
		}
		dst = append(dst, ']')
	}
	dst = appendStrings(dst, `,"labels":`, e.Labels)
	dst = appendStringField(dst, `,"taskId":`, e.TaskID)
	dst = appendStringField(dst, `,"taskStatus":`, e.TaskStatus)
	dst = appendStringField(dst, `,"statusMessage":`, e.StatusMessage)
	dst = appendStringField(dst, `,"authUrl":`, e.AuthURL)
	dst = appendStringField(dst, `,"subject":`, e.Subject)
	dst = appendStringField(dst, `,"kind":`, string(e.Kind))
	dst = appendStringField(dst, `,"error":`, e.Error)
	dst = appendStringField(dst, `,"model":`, e.Model)
	if len(e.Servers) > 0 {
		dst = append(dst, `,"servers":[`...)
		for i, s := range e.Servers {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"name":`...)
			dst = appendJSONString(dst, s.Name)
			dst = append(dst, `,"status":`...)
			dst = appendJSONString(dst, string(s.Status))
			dst = append(dst, `,"tools":`...)
			dst = strconv.AppendInt(dst, int64(s.Tools), 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendStrings(dst, `,"tools":`, e.Tools)
	dst = appendStringField(dst, `,"reason":`, e.Reason)
	dst = appendStringField(dst, `,"result":`, e.Result)
	if e.DurationMs != nil {
		dst = append(dst, `,"durationMs":`...)
		dst = strconv.AppendInt(dst, *e.DurationMs, 10)
	}
	if e.APIDurationMs != nil {
		dst = append(dst, `,"apiDurationMs":`...)
		dst = strconv.AppendInt(dst, *e.APIDurationMs, 10)
	}
	dst = appendIntField(dst, `,"steps":`, e.Steps)
	if u := e.Usage; u != nil {
		dst = append(dst, `,"usage":{"promptTokens":`...)
		dst = strconv.AppendInt(dst, int64(u.PromptTokens), 10)
		dst = append(dst, `,"completionTokens":`...)
		dst = strconv.AppendInt(dst, int64(u.CompletionTokens), 10)
		dst = append(dst, `,"totalTokens":`...)
		dst = strconv.AppendInt(dst, int64(u.TotalTokens), 10)
		dst = appendIntField(dst, `,"cachedPromptTokens":`, u.CachedPromptTokens)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// appendFloatField appends name and *f unless f is nil, spelled as
// encoding/json spells a float64 (a progress value parsed from JSON is
// never NaN or infinite).
func appendFloatField(dst []byte, name string, f *float64) []byte {
	if f == nil {
		return dst
	}
	dst = append(dst, name...)
	format := byte('f')
	if abs := math.Abs(*f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, *f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-09 → e-9, as encoding/json writes it
		dst = dst[:n-1]
	}
	return dst
}

// appendStringField appends name and s unless s is empty (omitempty).
func appendStringField(dst []byte, name, s string) []byte {
	if s == "" {
		return dst
	}
	return appendJSONString(append(dst, name...), s)
}

// appendIntField appends name and n unless n is 0 (omitempty).
func appendIntField(dst []byte, name string, n int) []byte {
	if n == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, name...), int64(n), 10)
}

// appendContentJSON appends one content block: a plain text block (the
// common case) directly, anything else through json.Marshal.
func appendContentJSON(dst []byte, c mcp.Content) ([]byte, error) {
	if t, ok := c.(mcp.TextContent); ok && t.Annotations == nil && t.Meta == nil {
		dst = append(dst, `{"type":`...)
		dst = appendJSONString(dst, t.Type)
		dst = append(dst, `,"text":`...)
		return append(appendJSONString(dst, t.Text), '}'), nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendRawJSON appends raw JSON as json.Marshal does a RawMessage:
// compacted, with <, >, &, U+2028 and U+2029 escaped; an error when raw is
// not valid JSON.
func appendRawJSON(dst, raw []byte) ([]byte, error) {
	start := len(dst)
	if !needsCompact(raw) {
		if !json.Valid(raw) {
			return dst, &json.SyntaxError{}
		}
		dst = append(dst, raw...)
	} else {
		buf := bytes.NewBuffer(dst)
		if err := json.Compact(buf, raw); err != nil {
			return dst, err
		}
		dst = buf.Bytes()
	}
	for i := start; i < len(dst); i++ {
		if c := dst[i]; c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return htmlEscapeFrom(dst, i), nil
		}
	}
	return dst, nil
}

// needsCompact reports whether raw holds whitespace outside its last byte
// position that compaction would remove (any JSON whitespace byte at all:
// inside strings it cannot appear unescaped, except as part of the text,
// where Compact keeps it, so this only decides the slower path).
func needsCompact(raw []byte) bool {
	for _, c := range raw {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

// htmlEscapeFrom escapes, in dst from i on, what json.HTMLEscape does.
func htmlEscapeFrom(dst []byte, i int) []byte {
	var b bytes.Buffer
	json.HTMLEscape(&b, dst[i:])
	return append(dst[:i], b.Bytes()...)
}

// appendJSONString appends s as a JSON string as json.Marshal writes it
// (HTML escaping on).
func appendJSONString(dst []byte, s string) []byte { return jsonenc.AppendString(dst, s, true) }

// appendStrings appends key and a non-empty list of strings (omitempty).
func appendStrings(dst []byte, key string, list []string) []byte {
	if len(list) == 0 {
		return dst
	}
	dst = append(dst, key...)
	dst = append(dst, '[')
	for i, t := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, t)
	}
	return append(dst, ']')
}
