package ccstream

import "encoding/json"

// The wire shapes, field for field the SDKMessage types of the Claude
// Agent SDK version the e2e suite pins (e2e/peers/package.json); every
// field those types require is written, nothing they do not know.

type systemInit struct {
	Type              string      `json:"type"`
	Subtype           string      `json:"subtype"`
	APIKeySource      string      `json:"apiKeySource"`
	ClaudeCodeVersion string      `json:"claude_code_version"`
	CWD               string      `json:"cwd"`
	Tools             []string    `json:"tools"`
	MCPServers        []mcpServer `json:"mcp_servers"`
	Model             string      `json:"model"`
	PermissionMode    string      `json:"permissionMode"`
	SlashCommands     []string    `json:"slash_commands"`
	OutputStyle       string      `json:"output_style"`
	Skills            []string    `json:"skills"`
	Plugins           []plugin    `json:"plugins"`
	UUID              string      `json:"uuid"`
	SessionID         string      `json:"session_id"`
}

type mcpServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type plugin struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

type assistantMessage struct {
	Type            string      `json:"type"`
	Message         betaMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
	UUID            string      `json:"uuid"`
}

// betaMessage is the Messages API's message object.
type betaMessage struct {
	ID                string          `json:"id"`
	Type              string          `json:"type"`
	Role              string          `json:"role"`
	Model             string          `json:"model"`
	Content           []any           `json:"content"`
	Container         json.RawMessage `json:"container"`
	ContextManagement json.RawMessage `json:"context_management"`
	Diagnostics       json.RawMessage `json:"diagnostics"`
	StopDetails       json.RawMessage `json:"stop_details"`
	StopReason        *string         `json:"stop_reason"`
	StopSequence      *string         `json:"stop_sequence"`
	Usage             usage           `json:"usage"`
}

type textBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Citations json.RawMessage `json:"citations"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type userMessage struct {
	Type            string    `json:"type"`
	Message         userParam `json:"message"`
	ParentToolUseID *string   `json:"parent_tool_use_id"`
	SessionID       string    `json:"session_id"`
	UUID            string    `json:"uuid"`
}

type userParam struct {
	Role    string            `json:"role"`
	Content []toolResultBlock `json:"content"`
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   []any  `json:"content"`
	IsError   bool   `json:"is_error"`
}

type textParam struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type imageBlock struct {
	Type   string      `json:"type"`
	Source imageSource `json:"source"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// usage is the Messages API's usage object with every field set (the
// SDK's NonNullableUsage).
type usage struct {
	CacheCreation            cacheCreation   `json:"cache_creation"`
	CacheCreationInputTokens int             `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int             `json:"cache_read_input_tokens"`
	FallbackCredit           json.RawMessage `json:"fallback_credit"`
	InferenceGeo             string          `json:"inference_geo"`
	InputTokens              int             `json:"input_tokens"`
	Iterations               []any           `json:"iterations"`
	OutputTokens             int             `json:"output_tokens"`
	OutputTokensDetails      outputDetails   `json:"output_tokens_details"`
	ServerToolUse            serverToolUse   `json:"server_tool_use"`
	ServiceTier              string          `json:"service_tier"`
	Speed                    string          `json:"speed"`
}

type cacheCreation struct {
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
}

type outputDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

type serverToolUse struct {
	WebFetchRequests  int `json:"web_fetch_requests"`
	WebSearchRequests int `json:"web_search_requests"`
}

var jsonNull = json.RawMessage("null")

func zeroUsage() usage {
	return usage{FallbackCredit: jsonNull, InferenceGeo: "", Iterations: []any{}, ServiceTier: "standard", Speed: "standard"}
}

type modelUsage struct {
	InputTokens              int     `json:"inputTokens"`
	OutputTokens             int     `json:"outputTokens"`
	CacheReadInputTokens     int     `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int     `json:"cacheCreationInputTokens"`
	WebSearchRequests        int     `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int     `json:"contextWindow"`
	MaxOutputTokens          int     `json:"maxOutputTokens"`
}

type resultMessage struct {
	Type              string                `json:"type"`
	Subtype           string                `json:"subtype"`
	DurationMs        int64                 `json:"duration_ms"`
	DurationAPIMs     int64                 `json:"duration_api_ms"`
	IsError           bool                  `json:"is_error"`
	NumTurns          int                   `json:"num_turns"`
	Result            *string               `json:"result,omitempty"`
	StopReason        *string               `json:"stop_reason"`
	SessionID         string                `json:"session_id"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             usage                 `json:"usage"`
	ModelUsage        map[string]modelUsage `json:"modelUsage"`
	PermissionDenials []Denial              `json:"permission_denials"`
	Errors            *[]string             `json:"errors,omitempty"` // the error subtypes only
	UUID              string                `json:"uuid"`
}

// streamEvent is a stream_event line: one Messages API streaming event.
type streamEvent struct {
	Type            string  `json:"type"`
	Event           any     `json:"event"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	SessionID       string  `json:"session_id"`
	UUID            string  `json:"uuid"`
}

type messageStart struct {
	Type    string      `json:"type"`
	Message betaMessage `json:"message"`
}

type blockStart struct {
	Type         string    `json:"type"`
	Index        int       `json:"index"`
	ContentBlock textBlock `json:"content_block"`
}

type blockDelta struct {
	Type  string    `json:"type"`
	Index int       `json:"index"`
	Delta textDelta `json:"delta"`
}

type textDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageDelta struct {
	Type              string           `json:"type"`
	ContextManagement json.RawMessage  `json:"context_management"`
	Delta             messageDeltaBody `json:"delta"`
	Usage             deltaUsage       `json:"usage"`
}

type messageDeltaBody struct {
	Container    json.RawMessage `json:"container"`
	StopDetails  json.RawMessage `json:"stop_details"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
}

type deltaUsage struct {
	CacheCreationInputTokens *int            `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int            `json:"cache_read_input_tokens"`
	FallbackCredit           json.RawMessage `json:"fallback_credit"`
	InputTokens              *int            `json:"input_tokens"`
	Iterations               json.RawMessage `json:"iterations"`
	OutputTokens             int             `json:"output_tokens"`
	OutputTokensDetails      json.RawMessage `json:"output_tokens_details"`
	ServerToolUse            json.RawMessage `json:"server_tool_use"`
}

func zeroDeltaUsage() deltaUsage { return deltaUsage{} }

type messageStop struct {
	Type string `json:"type"`
}

// toolProgress is a tool_progress line (SDKToolProgressMessage): a running
// tool's elapsed time.
type toolProgress struct {
	Type               string  `json:"type"`
	ToolUseID          string  `json:"tool_use_id"`
	ToolName           string  `json:"tool_name"`
	ParentToolUseID    *string `json:"parent_tool_use_id"`
	ElapsedTimeSeconds float64 `json:"elapsed_time_seconds"`
	UUID               string  `json:"uuid"`
	SessionID          string  `json:"session_id"`
}
