package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ModelClient is the model behind the agent loop. go-openai against any
// OpenAI-compatible endpoint is the default (NewOpenAIModel); a chat backend
// can bring its own. Complete sends one request and returns the whole
// assistant message; it calls onText with each piece of assistant text as
// it streams in (it may never call it, for a non-streaming model).
type ModelClient interface {
	Complete(ctx context.Context, req openai.ChatCompletionRequest, onText func(string)) (openai.ChatCompletionMessage, openai.Usage, error)
}

// OpenAIModelOptions configure the default model client.
type OpenAIModelOptions struct {
	BaseURL string
	APIKey  string
	// Timeout bounds one HTTP attempt (default 120s).
	Timeout time.Duration
	// MaxRetries on 429, 5xx and timeouts (default 4). Retry-After is
	// honoured up to MaxRetryWait (default 60s); a longer wait fails.
	MaxRetries   int
	MaxRetryWait time.Duration
	// HTTPClient overrides the transport (tests).
	HTTPClient *http.Client
}

// OpenAIModel streams chat completions with go-openai.
type OpenAIModel struct {
	client  *openai.Client
	baseURL string
}

// NewOpenAIModel returns the default model client.
func NewOpenAIModel(opts OpenAIModelOptions) *OpenAIModel {
	cfg := openai.DefaultConfig(opts.APIKey)
	if opts.BaseURL != "" {
		cfg.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 120 * time.Second
	}
	var base http.RoundTripper
	if opts.HTTPClient != nil && opts.HTTPClient.Transport != nil {
		base = opts.HTTPClient.Transport
	} else {
		// Bound the wait for an answer to start, not the stream's length.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = timeout
		base = t
	}
	retries := opts.MaxRetries
	if retries == 0 {
		retries = 4
	}
	maxWait := opts.MaxRetryWait
	if maxWait == 0 {
		maxWait = 60 * time.Second
	}
	cfg.HTTPClient = &http.Client{Transport: &retryTransport{base: base, retries: retries, maxWait: maxWait}}
	return &OpenAIModel{client: openai.NewClientWithConfig(cfg), baseURL: cfg.BaseURL}
}

// Complete implements ModelClient with a streaming request.
func (m *OpenAIModel) Complete(ctx context.Context, req openai.ChatCompletionRequest, onText func(string)) (openai.ChatCompletionMessage, openai.Usage, error) {
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := m.client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return openai.ChatCompletionMessage{}, openai.Usage{}, fmt.Errorf("model request: %w", err)
	}
	defer stream.Close()
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	var usage openai.Usage
	var text strings.Builder
	calls := map[int]*openai.ToolCall{}
	var order []int
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return openai.ChatCompletionMessage{}, usage, fmt.Errorf("model stream: %w", err)
		}
		if chunk.Usage != nil {
			usage = *chunk.Usage
		}
		for _, choice := range chunk.Choices {
			if d := choice.Delta.Content; d != "" {
				text.WriteString(d)
				if onText != nil {
					onText(d)
				}
			}
			for i, tc := range choice.Delta.ToolCalls {
				idx := i
				if tc.Index != nil {
					idx = *tc.Index
				}
				c, ok := calls[idx]
				if !ok {
					c = &openai.ToolCall{Type: openai.ToolTypeFunction}
					calls[idx] = c
					order = append(order, idx)
				}
				if tc.ID != "" {
					c.ID = tc.ID
				}
				if tc.Function.Name != "" {
					c.Function.Name += tc.Function.Name
				}
				c.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	msg.Content = text.String()
	for _, idx := range order {
		msg.ToolCalls = append(msg.ToolCalls, *calls[idx])
	}
	return msg, usage, nil
}

// retryTransport retries model requests on 429, 5xx and transient network
// errors with exponential backoff and jitter, honouring Retry-After. It is
// bounded in attempts and in any single wait.
type retryTransport struct {
	base    http.RoundTripper
	retries int
	maxWait time.Duration
}

// ErrModelUnavailable is returned when the model endpoint kept failing.
var ErrModelUnavailable = errors.New("model endpoint unavailable")

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			if req.GetBody == nil && req.Body != nil {
				return nil, fmt.Errorf("%w: request body cannot be replayed", ErrModelUnavailable)
			}
			r = req.Clone(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := t.base.RoundTrip(r)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil || !transientNetErr(err) {
				return nil, err
			}
			wait = backoffWait(attempt)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			wait = backoffWait(attempt)
			if ra, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
				wait = ra
			}
		default:
			return resp, nil
		}
		if attempt >= t.retries || wait > t.maxWait {
			if err != nil {
				return nil, fmt.Errorf("%w after %d attempts: %w", ErrModelUnavailable, attempt+1, err)
			}
			return resp, nil // let go-openai turn the last answer into an APIError
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

func transientNetErr(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

func backoffWait(attempt int) time.Duration {
	d := 250 * time.Millisecond << min(attempt, 6)
	return d + time.Duration(rand.Int64N(int64(d/4)+1))
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
