package dbscan

import (
	"encoding/base64"
	"strings"
	"testing"
)

// A value is found however the base64 around it is cut: padded or not, at
// the start of a longer token, encoded twice.
func TestWithDecodedFindsTheValue(t *testing.T) {
	const canary = "CANARY-77e1"
	for name, text := range map[string]string{
		"plain":       base64.StdEncoding.EncodeToString([]byte(`{"prompt":"` + canary + `"}`)),
		"at the end":  base64.StdEncoding.EncodeToString([]byte(`{"x":1} ` + canary)),
		"unpadded":    base64.RawStdEncoding.EncodeToString([]byte(`ab ` + canary)),
		"in a token":  "xyz" + base64.StdEncoding.EncodeToString([]byte(`{"v":"`+canary+`"}`)),
		"twice":       base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte(`"` + canary + `"`)))),
		"in a row":    `workflow_status: s1.x "` + base64.StdEncoding.EncodeToString([]byte(`"`+canary+`"`)) + `" 17`,
		"not encoded": "the value " + canary + " as is",
	} {
		if !strings.Contains(WithDecoded(text), canary) {
			t.Errorf("%s: %q: the value is not found", name, text)
		}
	}
}

func FuzzWithDecoded(f *testing.F) {
	f.Add("aGVsbG8gd29ybGQgaGVsbG8=")
	f.Add("====AAAA////++++")
	f.Fuzz(func(t *testing.T, s string) {
		if out := WithDecoded(s); !strings.HasPrefix(out, s) {
			t.Fatalf("the text itself is not kept first")
		}
	})
}
