package openaimodel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
	"github.com/agenthost/agenthost/host/modeltest"
	"github.com/agenthost/agenthost/llmview"
)

func TestGenerateStreamsTextThenTheWholeMessage(t *testing.T) {
	srv := modeltest.New(modeltest.Script{{
		Text:      "Looking it up.",
		ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "db__query", Arguments: `{"q":"SELECT 1"}`}},
		Usage:     &modeltest.Usage{PromptTokens: 7, CompletionTokens: 3, CachedTokens: 5},
	}}, modeltest.WithChunkRunes(4))
	m := openaimodel.New(openaimodel.Options{BaseURL: srv.Start(t), APIKey: "sk-test"})

	req := &model.Request{
		Model: "scripted",
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "be brief"},
			{Role: model.RoleUser, Content: "hi"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c0", Name: "db__query", Arguments: `{}`}}},
			{Role: model.RoleTool, ToolCallID: "c0", Content: "ok"},
		},
		Tools: []llmview.Function{{Name: "db__query", Description: "Run a query", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
	}
	var partial string
	var final *model.Response
	for resp, err := range m.Generate(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if final != nil {
			t.Fatal("a response after the final one")
		}
		if resp.Partial {
			partial += resp.Message.Content
			continue
		}
		final = resp
	}
	srv.AssertNoFailures(t)
	if final == nil {
		t.Fatal("no final response")
	}
	if partial != "Looking it up." {
		t.Errorf("streamed text %q", partial)
	}
	want := model.Message{Role: model.RoleAssistant, Content: "Looking it up.",
		ToolCalls: []model.ToolCall{{ID: "c1", Name: "db__query", Arguments: `{"q":"SELECT 1"}`}}}
	if d := cmp.Diff(want, final.Message); d != "" {
		t.Errorf("final message (-want +got):\n%s", d)
	}
	if want := (model.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10, CachedPromptTokens: 5}); final.Usage != want {
		t.Errorf("usage %+v, want %+v (cached tokens from prompt_tokens_details)", final.Usage, want)
	}

	// What went on the wire: every message and the tool, in OpenAI's shape.
	msgs := srv.MessagesOf(0)
	if len(msgs) != 4 || msgs[0].Role != "system" || msgs[2].ToolCalls[0].Function.Name != "db__query" || msgs[3].ToolCallID != "c0" {
		t.Errorf("messages on the wire: %+v", msgs)
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(srv.ToolsOf(0), &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools[0].Type != "function" || tools[0].Function.Name != "db__query" || tools[0].Function.Description != "Run a query" {
		t.Errorf("tools on the wire: %s", srv.ToolsOf(0))
	}
}

func TestGenerateStopsWhenTheConsumerStops(t *testing.T) {
	srv := modeltest.New(modeltest.Script{{Text: "one two three four five six"}}, modeltest.WithChunkRunes(2))
	m := openaimodel.New(openaimodel.Options{BaseURL: srv.Start(t), APIKey: "sk-test"})
	n := 0
	for resp, err := range m.Generate(context.Background(), &model.Request{Model: "scripted", Messages: []model.Message{{Role: model.RoleUser, Content: "x"}}}) {
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Partial {
			t.Fatal("reached the final response after the consumer stopped")
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("%d responses", n)
	}
}

func TestGenerateReportsAnError(t *testing.T) {
	srv := modeltest.New(modeltest.Script{{Status: 400, Body: `{"error":{"message":"bad request"}}`}})
	m := openaimodel.New(openaimodel.Options{BaseURL: srv.Start(t), APIKey: "sk-test"})
	var gotErr error
	for _, err := range m.Generate(context.Background(), &model.Request{Model: "scripted", Messages: []model.Message{{Role: model.RoleUser, Content: "x"}}}) {
		gotErr = err
	}
	if gotErr == nil {
		t.Fatal("no error for a 400 answer")
	}
}
