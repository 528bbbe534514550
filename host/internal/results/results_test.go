package results

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/bindings"
)

func TestText(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(make([]byte, 300))
	tests := []struct {
		name    string
		content mcp.Content
		want    string
		absent  string
	}{
		{"text passes through", mcp.NewTextContent("hello\nworld"), "hello\nworld", ""},
		{"image summarised", mcp.NewImageContent(png, "image/png"), "[image image/png, 300 bytes]", png},
		{"audio summarised", mcp.NewAudioContent(png, "audio/wav"), "[audio audio/wav, 300 bytes]", png},
		{"text resource", mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "body"}), "[resource file:///a.txt (text/plain)]\nbody", ""},
		{"blob resource", mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "file:///a.bin", MIMEType: "application/octet-stream", Blob: png}), "[resource file:///a.bin (application/octet-stream), 300 bytes]", png},
		{"resource link", mcp.NewResourceLink("file:///b", "b", "", "text/plain"), "[resource link file:///b (text/plain) b]", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(tc.content)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if tc.absent != "" && strings.Contains(got, tc.absent) {
				t.Errorf("bytes pasted into the text")
			}
		})
	}
}

func TestResultTextMarksStructuredOnly(t *testing.T) {
	r := &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1}}
	if got := ForModel(r); got != `{"n":1}` {
		t.Errorf("got %q", got)
	}
	if got := ForModel(&mcp.CallToolResult{}); got != "(no output)" {
		t.Errorf("empty result: %q", got)
	}
}

func TestRedactResultFindsEchoedSecrets(t *testing.T) {
	const secret = "tok-CANARY/5b1e"
	redactor := bindings.NewRedactor()
	redactor.Add(secret)
	redactor.Add("98765432") // a numeric PIN
	tests := []struct {
		name   string
		result *mcp.CallToolResult
	}{
		{"text", &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("token is " + secret)}}},
		{"structured", &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("ok")},
			StructuredContent: map[string]any{"rows": []any{map[string]any{"t": secret}}}}},
		{"meta", &mcp.CallToolResult{Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"debug": secret}}},
			Content: []mcp.Content{mcp.NewTextContent("ok")}}},
		{"embedded resource", &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(
			mcp.TextResourceContents{URI: "file:///x", Text: secret})}}},
		{"image mimeType", wireResult(t, `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png; v=`+secret+`"}]}`)},
		{"audio mimeType", wireResult(t, `{"content":[{"type":"audio","data":"AAAA","mimeType":"`+secret+`"}]}`)},
		{"image data", wireResult(t, `{"content":[{"type":"image","data":"`+secret+`","mimeType":"image/png"}]}`)},
		{"image _meta", wireResult(t, `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png","_meta":{"k":"`+secret+`"}}]}`)},
		{"text _meta", wireResult(t, `{"content":[{"type":"text","text":"ok","_meta":{"k":["`+secret+`"]}}]}`)},
		{"text _meta progressToken", wireResult(t, `{"content":[{"type":"text","text":"ok","_meta":{"progressToken":"`+secret+`"}}]}`)},
		{"text annotations lastModified", wireResult(t, `{"content":[{"type":"text","text":"ok","annotations":{"lastModified":"`+secret+`"}}]}`)},
		{"text annotations audience", wireResult(t, `{"content":[{"type":"text","text":"ok","annotations":{"audience":["user","`+secret+`"]}}]}`)},
		{"audio annotations", wireResult(t, `{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav","annotations":{"lastModified":"`+secret+`"}}]}`)},
		{"number in structured content", wireResult(t, `{"content":[],"structuredContent":{"pin":98765432}}`)},
		{"number spelled otherwise", wireResult(t, `{"content":[],"structuredContent":{"rows":[{"pin":9.8765432e7}]}}`)},
		{"number in _meta", wireResult(t, `{"content":[{"type":"text","text":"ok","_meta":{"pin":98765432}}]}`)},
		{"python-escaped text", wireResult(t, `{"content":[{"type":"text","text":"{\"t\": \"tok-\\u0043ANARY\\/5b1e\"}"}]}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := Redact(redactor, tc.result)
			b, _ := json.Marshal(out)
			if strings.Contains(string(b), secret) || redactor.ContainsSecret(string(b)) || strings.Contains(string(b), "98765432") {
				t.Errorf("secret survived: %s", b)
			}
			if text := ForModel(out); strings.Contains(text, secret) || redactor.ContainsSecret(text) || strings.Contains(text, "98765432") {
				t.Errorf("the model would read it: %s", text)
			}
		})
	}
	clean := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("nothing here")},
		StructuredContent: map[string]any{"n": 1.0}, Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"a": "b"}}}}
	if got := Redact(redactor, clean); got != clean {
		t.Errorf("a clean result was rebuilt")
	}
}

// wireResult parses a tools/call result as the host receives it.
func wireResult(t *testing.T, raw string) *mcp.CallToolResult {
	t.Helper()
	msg := json.RawMessage(raw)
	r, err := mcp.ParseCallToolResult(&msg)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return r
}

func TestModelResultText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int64
		keep string // the text kept before the note
	}{
		{"under the limit", "short", 10, "short"},
		{"at the limit", "0123456789", 10, "0123456789"},
		{"cut", "0123456789abc", 10, "0123456789"},
		{"cut inside a character", "012345678é", 10, "012345678"},
		{"no limit", strings.Repeat("x", 100), 0, strings.Repeat("x", 100)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ModelText(tc.in, tc.max)
			if !strings.HasPrefix(got, tc.keep) || !utf8.ValidString(got) {
				t.Fatalf("got %q, want it to start with %q", got, tc.keep)
			}
			if tc.keep == tc.in {
				if got != tc.in {
					t.Fatalf("got %q, want the text as it is", got)
				}
				return
			}
			note := got[len(tc.keep):]
			want := "\n[agenthost: the tool result was cut here: " + strconv.Itoa(len(tc.in)-len(tc.keep)) + " of its " + strconv.Itoa(len(tc.in)) + " bytes were left out"
			if !strings.HasPrefix(note, want) {
				t.Fatalf("note %q, want %q", note, want)
			}
		})
	}
}
