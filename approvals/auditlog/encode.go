package auditlog

import (
	"strconv"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

// The audit log encodes one record per tool call on the call path; these
// appenders write the record's JSON without reflection (the same bytes
// encoding/json would produce, minus HTML escaping, which a log does not
// need).

func (r *Record) appendJSON(b []byte) []byte { return r.appendJSONWith(b, nil) }

// appendJSONWith is appendJSON with the tool's fields from tools (nil:
// none).
func (r *Record) appendJSONWith(b []byte, tools *toolCache) []byte {
	b = append(b, `{"ts":`...)
	b = norm.AppendTime(b, r.TS)
	b = norm.AppendField(b, "sessionId", r.SessionID)
	b = norm.AppendField(b, "callId", r.CallID)
	b = norm.AppendField(b, "phase", string(r.Phase))
	b = tools.appendTool(b, r)
	b = append(b, `,"rules":`...)
	b = norm.AppendStrings(b, r.Rules)
	b = norm.AppendField(b, "decision", string(r.Decision))
	b = norm.AppendField(b, "outcome", string(r.Outcome))
	b = append(b, `,"approvers":[`...)
	for i, v := range r.Approvers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = norm.AppendString(b, v.ApproverID)
		b = norm.AppendField(b, "decision", string(v.Decision))
		b = append(b, `,"ts":`...)
		b = norm.AppendTime(b, v.TS)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = norm.AppendField(b, "result", string(r.Result))
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, r.DurationMs, 10)
	if len(r.ResultLabels) > 0 {
		b = append(b, `,"resultLabels":[`...)
		for i, l := range r.ResultLabels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"label":`...)
			b = norm.AppendString(b, l.Label)
			b = norm.AppendField(b, "source", l.Source)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
