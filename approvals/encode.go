package approvals

import (
	"strconv"
	"time"

	"github.com/agenthost/agenthost/internal/jsonenc"
)

// The audit log encodes one record per tool call on the call path; these
// appenders write the record's JSON without reflection (the same bytes
// encoding/json would produce, minus HTML escaping, which a log does not
// need).

func (r *Record) appendJSON(b []byte) []byte {
	b = append(b, `{"ts":`...)
	b = appendTime(b, r.TS)
	b = appendField(b, "sessionId", r.SessionID)
	b = appendField(b, "callId", r.CallID)
	b = appendField(b, "phase", string(r.Phase))
	b = appendField(b, "server", r.Server)
	b = appendField(b, "tool", r.Tool)
	b = appendField(b, "toolDefHash", r.ToolDefHash)
	b = appendField(b, "exposedName", r.ExposedName)
	b = append(b, `,"arguments":`...)
	b = append(b, jsonOrString(r.Arguments)...)
	b = append(b, `,"secureParams":`...)
	b = appendStrings(b, r.SecureParams)
	b = append(b, `,"risk":`...)
	if r.Risk == nil {
		b = append(b, "null"...)
	} else {
		b = r.Risk.appendJSON(b)
	}
	b = append(b, `,"rules":`...)
	b = appendStrings(b, r.Rules)
	b = appendField(b, "decision", string(r.Decision))
	b = appendField(b, "outcome", string(r.Outcome))
	b = append(b, `,"approvers":[`...)
	for i, v := range r.Approvers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendString(b, v.ApproverID)
		b = appendField(b, "decision", string(v.Decision))
		b = append(b, `,"ts":`...)
		b = appendTime(b, v.TS)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = appendField(b, "result", string(r.Result))
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, r.DurationMs, 10)
	if len(r.ResultLabels) > 0 {
		b = append(b, `,"resultLabels":[`...)
		for i, l := range r.ResultLabels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"label":`...)
			b = appendString(b, l.Label)
			b = appendField(b, "source", l.Source)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (e *Effective) appendJSON(b []byte) []byte {
	b = append(b, `{"category":`...)
	b = appendString(b, string(e.Category))
	b = appendField(b, "riskLevel", string(e.RiskLevel))
	b = appendField(b, "blastRadius", string(e.BlastRadius))
	b = appendField(b, "reversibility", string(e.Reversibility))
	b = append(b, `,"sideEffects":`...)
	b = appendStrings(b, e.SideEffects)
	b = appendField(b, "approvalRecommendation", string(e.ApprovalRecommendation))
	b = append(b, `,"minTrustLevel":`...)
	b = strconv.AppendInt(b, int64(e.MinTrustLevel), 10)
	s := e.Source
	b = append(b, `,"source":{"category":`...)
	b = appendString(b, string(s.Category))
	b = appendField(b, "riskLevel", string(s.RiskLevel))
	b = appendField(b, "blastRadius", string(s.BlastRadius))
	b = appendField(b, "reversibility", string(s.Reversibility))
	b = appendField(b, "sideEffects", string(s.SideEffects))
	b = appendField(b, "approvalRecommendation", string(s.ApprovalRecommendation))
	b = appendField(b, "minTrustLevel", string(s.MinTrustLevel))
	b = append(b, '}')
	if e.Unclassified {
		b = append(b, `,"unclassified":true`...)
	}
	if len(e.ResultLabels) > 0 {
		b = append(b, `,"resultLabels":`...)
		b = appendStrings(b, e.ResultLabels)
	}
	return append(b, '}')
}

func appendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func appendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendString writes s as a JSON string, as encoding/json does without
// HTML escaping.
func appendString(b []byte, s string) []byte { return jsonenc.AppendString(b, s, false) }
