package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"
)

func TestRecording(t *testing.T) {
	const canary = `s3cr3t<&>"x"` // go-openai writes <, > and & as \u escapes
	var record bytes.Buffer
	srv := New(Script{{ToolCalls: []ToolCall{{Name: "s__t", Arguments: `{"a":1}`, ID: "c1"}}}, {Text: "done"}}, WithRecordWriter(&record))
	client := newClient(srv.Start(t), "sk-KEYVALUE")

	tools := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{
		Name: "s__t", Description: "does t", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`),
	}}}
	req := userRequest("please " + canary)
	req.Tools = tools
	if _, err := client.CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages,
		openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "s__t", Arguments: `{"a":1}`}}}},
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: "c1", MultiContent: []openai.ChatMessagePart{{Type: "text", Text: "part one, "}, {Type: "text", Text: "part two"}}},
	)
	stream, err := client.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	readStream(t, stream)
	srv.AssertNoFailures(t)

	bodies := srv.Requests()
	if len(bodies) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(bodies))
	}
	var second map[string]any
	if err := json.Unmarshal(bodies[1], &second); err != nil || second["stream"] != true {
		t.Errorf("second body = %s (%v), want the raw streaming request", bodies[1], err)
	}

	wantTools, _ := json.Marshal(tools)
	for i := range 2 {
		var got, want any
		_ = json.Unmarshal(wantTools, &want)
		if err := json.Unmarshal(srv.ToolsOf(i), &got); err != nil {
			t.Fatalf("ToolsOf(%d) = %s: %v", i, srv.ToolsOf(i), err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ToolsOf(%d) (-want +got):\n%s", i, diff)
		}
	}

	msgs := srv.MessagesOf(1)
	if len(msgs) != 3 {
		t.Fatalf("MessagesOf(1) has %d messages, want 3", len(msgs))
	}
	if msgs[0].Role != "user" || msgs[0].Text() != "please "+canary {
		t.Errorf("user message = %q %q", msgs[0].Role, msgs[0].Text())
	}
	if call := msgs[1].ToolCalls; len(call) != 1 || call[0].ID != "c1" || call[0].Function.Name != "s__t" || call[0].Function.Arguments != `{"a":1}` {
		t.Errorf("assistant tool calls = %+v", call)
	}
	if msgs[2].ToolCallID != "c1" || msgs[2].Text() != "part one, part two" {
		t.Errorf("tool message = %q %q, want c1 with both parts", msgs[2].ToolCallID, msgs[2].Text())
	}

	all := srv.AllText()
	if bytes.Contains(bodies[0], []byte(canary)) {
		t.Fatal("test premise: go-openai should escape the canary on the wire")
	}
	if !strings.Contains(all, canary) {
		t.Error("AllText does not find the canary that was sent escaped")
	}
	if !strings.Contains(all, "[redacted]") || strings.Contains(all, "KEYVALUE") {
		t.Error("AllText should carry headers with the Authorization value redacted")
	}

	fileRec := filepath.Join(t.TempDir(), "record.jsonl")
	if err := os.WriteFile(fileRec, record.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := ReadRecording(fileRec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(srv.Recorded(), fromFile); diff != "" {
		t.Errorf("record file differs from memory (-memory +file):\n%s", diff)
	}
	if got := strings.Count(record.String(), "\n"); got != 2 {
		t.Errorf("record has %d lines, want 2", got)
	}
}

func TestRecordingKeepsBrokenBodiesAndFailures(t *testing.T) {
	var record bytes.Buffer
	srv := New(Script{{Text: "x"}}, WithRecordWriter(&record))
	base := srv.Start(t)
	post(t, context.Background(), base+"/chat/completions", "not json\x00").Body.Close()
	post(t, context.Background(), base+"/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`).Body.Close()

	path := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(path, record.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept string
	if err := json.Unmarshal(rec[0].Body, &kept); err != nil || kept != "not json\x00" {
		t.Errorf("broken body recorded as %s, want the original as a JSON string", rec[0].Body)
	}
	if diff := cmp.Diff(srv.Failures(), rec.Failures()); diff != "" || len(rec.Failures()) != 2 {
		t.Errorf("failures in the file = %q, in memory %q", rec.Failures(), srv.Failures())
	}
	if !strings.Contains(rec[1].Failures[0], "request 1: no model") {
		t.Errorf("second request failures = %q", rec[1].Failures)
	}
	if rec.ToolsOf(0) != nil || rec.MessagesOf(0) != nil {
		t.Error("a non-JSON body should have no tools and no messages")
	}
}

func TestRecordingIndexOutOfRangePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "request 0 not recorded") {
			t.Errorf("recover() = %v, want a panic naming the missing request", r)
		}
	}()
	New(nil).ToolsOf(0)
}

func TestReadRecordingErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"index":0}`+"\n{oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecording(bad); err == nil || !strings.Contains(err.Error(), "entry 1") {
		t.Errorf("ReadRecording(bad) error = %v, want one naming entry 1", err)
	}
	if _, err := ReadRecording(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadRecording(missing) succeeded")
	}
}
