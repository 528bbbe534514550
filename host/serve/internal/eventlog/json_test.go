package eventlog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host"
)

// checkSameJSON fails unless appendEventJSON gives what json.Marshal
// gives for e (or both fail).
func checkSameJSON(t *testing.T, e *host.Event) {
	t.Helper()
	want, wantErr := json.Marshal(e)
	prefix := []byte("prefix")
	got, err := appendEventJSON(prefix, e)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
	}
	if wantErr != nil {
		if string(got) != "prefix" {
			t.Fatalf("a failed encoding left %q after the prefix", got[len(prefix):])
		}
		return
	}
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("encoded\n%s\nwant (json.Marshal)\n%s", got, want)
	}
}

func TestEventJSONMatchesEncodingJSON(t *testing.T) {
	zero, one, ms := 0, 2, int64(412)
	yes, no := true, false
	awkward := "a<b>&c \"q\" \\ \b\f\n\r\t \x00\x1f\x7f é \u2028\u2029 \xff\xfe end"
	tests := []struct {
		name string
		e    host.Event
	}{
		{"empty", host.Event{}},
		{"session_start", host.Event{Type: host.EventSessionStart, SessionID: "s1", Model: "gpt",
			Servers: []host.EventServer{{Name: "db", Status: "connected", Tools: 3}, {Name: "x", Status: "failed"}},
			Tools:   []string{"db__lookup", "db__<drop>"}}},
		{"tool_call", host.Event{Type: host.EventToolCall, SessionID: "s1", Step: 1, CallID: "c1", ExposedName: "db__lookup",
			Server: "db", Tool: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}},
		{"arguments with spaces", host.Event{Type: host.EventToolCall, Arguments: json.RawMessage(" {\n \"q\" : [1, 2,\t{\"a b\": \"c d\"}] }\r\n")}},
		{"arguments with html", host.Event{Type: host.EventToolCall, Arguments: json.RawMessage(`{"q":"<script>&amp;</script>","s":"` + "\u2028\u2029" + `"}`)}},
		{"arguments a string", host.Event{Type: host.EventToolCall, Arguments: json.RawMessage(`"not json at all"`)}},
		{"arguments invalid", host.Event{Type: host.EventToolCall, Arguments: json.RawMessage(`{"q":`)}},
		{"arguments two values", host.Event{Type: host.EventToolCall, Arguments: json.RawMessage(`{} {}`)}},
		{"arguments empty slice", host.Event{Type: host.EventToolCall, Arguments: json.RawMessage{}}},
		{"approval", host.Event{Type: host.EventApproval, Decision: "ask", Outcome: "rejected", Approvers: &one, Explanation: awkward}},
		{"approval zero approvers", host.Event{Type: host.EventApproval, Decision: "allow", Outcome: "auto_allowed", Approvers: &zero}},
		{"tool_result text", host.Event{Type: host.EventToolResult, IsError: &no, Content: []mcp.Content{mcp.NewTextContent("found " + awkward)}}},
		{"tool_result error", host.Event{Type: host.EventToolResult, IsError: &yes, Content: []mcp.Content{mcp.NewTextContent("")}}},
		{"tool_result empty content", host.Event{Type: host.EventToolResult, Content: []mcp.Content{}}},
		{"tool_result other content", host.Event{Type: host.EventToolResult, Content: []mcp.Content{
			mcp.NewImageContent("aGk=", "image/png"),
			&mcp.TextContent{Type: "text", Text: "by pointer <"},
			mcp.TextContent{Annotated: mcp.Annotated{Annotations: &mcp.Annotations{Priority: new(0.5)}}, Type: "text", Text: "annotated"},
			mcp.TextContent{Meta: &mcp.Meta{AdditionalFields: map[string]any{"k": "v&"}}, Type: "text", Text: "with meta"},
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///a", MIMEType: "text/plain", Text: "r"}),
			nil,
		}}},
		{"error", host.Event{Type: host.EventError, CallID: "c1", Kind: host.KindBinding, Error: awkward}},
		{"authorization", host.Event{Type: host.EventAuthorization, Server: "linear", AuthURL: "https://auth.example.com/authorize?a=1&b=<2>", Subject: "user-42"}},
		{"assistant", host.Event{Type: host.EventAssistant, Step: -3, Text: awkward}},
		{"session_end", host.Event{Type: host.EventSessionEnd, Reason: "done", Result: awkward, DurationMs: &ms, Steps: 2,
			Usage: &host.Usage{PromptTokens: 5120, CompletionTokens: -1, TotalTokens: 5263}}},
		{"unknown type", host.Event{Type: "a\"b\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkSameJSON(t, &tc.e) })
	}
}

// fill sets every field reachable from v to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v<&>")
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage
			v.SetBytes([]byte(`{"a": [1, "<b>"]}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Interface:
		if v.Type() == reflect.TypeFor[mcp.Content]() {
			v.Set(reflect.ValueOf(mcp.NewTextContent("t")))
		}
	}
}

// A field added to host.Event without its place in appendEventJSON fails
// here: every field is set and the output compared with json.Marshal.
func TestEventJSONKnowsEveryField(t *testing.T) {
	var e host.Event
	fill(reflect.ValueOf(&e).Elem())
	for i := range reflect.TypeFor[host.Event]().NumField() {
		if f := reflect.ValueOf(e).Field(i); f.IsZero() {
			t.Fatalf("fill left %s unset", reflect.TypeFor[host.Event]().Field(i).Name)
		}
	}
	checkSameJSON(t, &e)
}

// The frame of an event that cannot be encoded carries the internal error
// in its place, under the event's own name and number.
func TestAppendFrame(t *testing.T) {
	tests := []struct {
		name string
		e    host.Event
		want string
	}{
		{"event", host.Event{Type: host.EventAssistant, Text: "hi"},
			"id: 7\nevent: assistant\ndata: {\"type\":\"assistant\",\"text\":\"hi\"}\n\n"},
		{"cannot be encoded", host.Event{Type: host.EventToolCall, Arguments: json.RawMessage(`{`)},
			"id: 7\nevent: tool_call\ndata: " + eventEncodeError + "\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(AppendFrame([]byte("x"), 7, &tc.e)); got != "x"+tc.want {
				t.Fatalf("frame %q, want %q", got, "x"+tc.want)
			}
		})
	}
}

// Frames stay as they were handed out while later ones are cut, in the
// same chunk or in new ones; one larger than a chunk is kept at its size.
func TestFrameArenaKeepsFrames(t *testing.T) {
	var a FrameArena
	var frames [][]byte
	var want []string
	for i := range 50 {
		size := i * 37
		if i%7 == 6 {
			size = i * frameChunk / 4 // beyond a chunk
		}
		e := host.Event{Type: host.EventAssistant, Text: string(bytes.Repeat([]byte{'a' + byte(i%26)}, size))}
		f := a.Frame(int64(i+1), &e)
		if cap(a.buf) > frameChunk {
			// The frame shares it: a log would keep up to twice its size.
			t.Fatalf("frame %d (%d bytes) left the arena holding a %d-byte array", i+1, len(f), cap(a.buf))
		}
		frames = append(frames, f)
		want = append(want, string(AppendFrame(nil, int64(i+1), &e)))
	}
	for i, f := range frames {
		if string(f) != want[i] {
			t.Fatalf("frame %d changed: %q, want %q", i+1, f, want[i])
		}
		if cap(f) != len(f) {
			t.Fatalf("frame %d can be appended to in place", i+1)
		}
	}
}

func FuzzEventJSON(f *testing.F) {
	f.Add("session_start", "s1", 1, "text <&>", "c1", []byte(`{"q":"x"}`), "kind", 3, true)
	f.Add("tool_call", "\u2028", -5, "\xff\x00\"\\", "", []byte(" [1, 2 ,\n3] "), "", 0, false)
	f.Add("", "", 0, "", "", []byte(`{"a":"<\u2029>"}`), "", 0, false)
	f.Add("x", "é", 0, "\b\f\n\r\t\x1f", "id", []byte(`{"a":`), "binding", 1<<40, true)
	f.Add("y", "", 0, "", "", []byte(`"\u00e9\ud83d"`), "", 0, false)
	f.Fuzz(func(t *testing.T, typ, sid string, step int, text, callID string, args []byte, kind string, n int, flag bool) {
		e := host.Event{Type: host.EventType(typ), SessionID: sid, Step: step, Text: text, CallID: callID,
			ExposedName: text, Arguments: args, Kind: host.Kind(kind), Error: sid + text, Tools: []string{text, sid}}
		n64 := int64(n)
		if flag {
			e.IsError, e.Approvers, e.DurationMs = &flag, &n, &n64
			e.Content = []mcp.Content{mcp.NewTextContent(text), mcp.NewImageContent(sid, text)}
			e.Servers = []host.EventServer{{Name: text, Status: host.ServerStatus(sid), Tools: n}}
			e.Usage = &host.Usage{PromptTokens: n, CompletionTokens: step, TotalTokens: n + step}
		}
		checkSameJSON(t, &e)
	})
}

// TestAppendFloatFieldSpellsAsEncodingJSON: a progress value is written
// byte for byte as json.Marshal writes it, exponents included.
func TestAppendFloatFieldSpellsAsEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 0.5, 1, -3, 42.125, 1e-7, 1.5e-9, 1e21, 123456789012345678, 1e20, -2.5e-7} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendFloatField(nil, "", &f); string(got) != string(want) {
			t.Errorf("appendFloatField(%v) = %s, want %s", f, got, want)
		}
	}
	if got := appendFloatField([]byte("x"), `,"p":`, nil); string(got) != "x" {
		t.Errorf("nil wrote %q", got)
	}
}
