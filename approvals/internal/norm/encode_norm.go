package norm

import (
	"time"

	"github.com/agenthost/agenthost/internal/jsonenc"
)

func AppendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return AppendString(b, value)
}

func AppendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// AppendString writes s as a JSON string, as encoding/json does without
// HTML escaping.
func AppendString(b []byte, s string) []byte { return jsonenc.AppendString(b, s, false) }
