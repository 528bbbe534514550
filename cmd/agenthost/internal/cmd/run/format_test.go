package run

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestParseOutputFormat(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    outputFormat
		wantErr bool
	}{
		{"text", formatText, false},
		{"json", formatJSON, false},
		{"stream-json", formatStreamJSON, false},
		{"agenthost-stream-json", formatAgentStreamJSON, false},
		{"agenthost-json", formatAgentJSON, false},
		{"", formatText, true},
		{"JSON", formatText, true},
		{"stream_json", formatText, true},
		{"xml", formatText, true},
	} {
		got, err := parseOutputFormat(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseOutputFormat(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "text, json, stream-json") {
				t.Errorf("parseOutputFormat(%q) error %q does not list the valid values", tc.in, err)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("parseOutputFormat(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
	if s := outputFormat(99).String(); !strings.Contains(s, "99") {
		t.Errorf("outputFormat(99).String() = %q", s)
	}
}

// TestRunRefusesUnknownOutputFormat: a bad --output-format is a usage error
// (exit 2) naming the flag, the value and the valid values, reported before
// any config is looked for.
func TestRunRefusesUnknownOutputFormat(t *testing.T) {
	f, s := cmdtest.Factory(t, "", "")
	f.ConfigPath = "does-not-exist.yaml"
	err := cmdtest.Parse(NewCmdRun(f, nil), "hello", "--output-format", "xml")
	if cmdtest.Code(err) != cmdutil.ExitUsage {
		t.Fatalf("exit code %d, want %d: %v", cmdtest.Code(err), cmdutil.ExitUsage, err)
	}
	for _, want := range []string{"--output-format", `"xml"`, "text, json, stream-json"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(s.ErrOut.String()+err.Error(), "does-not-exist") {
		t.Errorf("the config was read before the flag was checked: %q", s.ErrOut.String())
	}
}
