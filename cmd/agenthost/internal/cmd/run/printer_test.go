package run

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

func TestTextPrinterCallsAndResults(t *testing.T) {
	var out, errOut bytes.Buffer
	p := NewTextPrinter(&out, &errOut)
	yes := true
	for _, e := range []host.Event{
		{Type: host.EventToolCall, CallID: "a", Server: "shop", Tool: "echo", Arguments: json.RawMessage(`{"q":"` + strings.Repeat("x", 300) + `"}`)},
		{Type: host.EventToolCall, CallID: "b", ExposedName: "shop__fail"},
		{Type: host.EventToolResult, CallID: "b", ExposedName: "shop__fail", IsError: &yes},
		{Type: host.EventToolResult, CallID: "a", Server: "shop", Tool: "echo"},
		{Type: host.EventError, Error: "the model failed"},
		{Type: host.EventSessionEnd, Reason: host.EndMaxSteps, Steps: 1},
	} {
		p.Print(e)
	}
	got := errOut.String()
	for _, want := range []string{"→ [1] shop/echo {\"q\":\"xxx", "…\n", "→ [2] shop__fail \n", "← [2] shop__fail error: ", "← [1] shop/echo ok: ",
		"agenthost: the model failed\n", "agenthost: turn ended: max_steps after 1 step\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q", out.String())
	}
}
