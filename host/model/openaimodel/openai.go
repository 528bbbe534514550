// Package openaimodel is agenthost's default model client: model.LLM over
// any OpenAI-compatible chat completions endpoint, with go-openai, streaming,
// and bounded retries on 429, 5xx and transient network errors that honour
// Retry-After.
package openaimodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/httpredirect"
)

// Options configure the client.
type Options struct {
	BaseURL string
	APIKey  string
	// Timeout bounds the wait for an answer to start (default 120s); it
	// does not bound a long stream.
	Timeout time.Duration
	// MaxRetries on 429, 5xx and timeouts (default 4). Retry-After is
	// honoured up to MaxRetryWait (default 60s); a longer wait fails.
	MaxRetries   int
	MaxRetryWait time.Duration
	// HTTPClient overrides the transport (tests); only its Transport is
	// used (redirects follow the one policy, internal/httpredirect).
	HTTPClient *http.Client
	// Propagate, when set, adds headers to every request (on a copy of
	// it) from the request's context: the host uses it to send the W3C
	// trace context (traceparent, tracestate) of the model request's span.
	Propagate func(ctx context.Context, header http.Header)
}

// Model streams chat completions from an OpenAI-compatible endpoint with
// go-openai. It implements model.LLM.
type Model struct {
	client  *openai.Client
	baseURL string
}

// New returns a client for an OpenAI-compatible endpoint.
func New(opts Options) *Model {
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
	var rt http.RoundTripper = &retryTransport{base: base, retries: retries, maxWait: maxWait}
	if opts.Propagate != nil {
		rt = &propagateTransport{base: rt, propagate: opts.Propagate}
	}
	// Redirects stay on the endpoint's origin (docs/config.md,
	// "Redirects"): the API key and the prompt go nowhere else.
	cfg.HTTPClient = httpredirect.NewClient(rt, httpredirect.Policy{})
	return &Model{client: openai.NewClientWithConfig(cfg), baseURL: cfg.BaseURL}
}

// BaseURL is the endpoint the client talks to.
func (m *Model) BaseURL() string { return m.baseURL }

// Generate implements model.LLM with a streaming request: a partial
// response per piece of assistant text, then the whole message.
func (m *Model) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := m.client.CreateChatCompletionStream(ctx, toOpenAI(req))
		if err != nil {
			yield(nil, fmt.Errorf("model request: %w", err))
			return
		}
		defer stream.Close()
		var (
			usage  model.Usage
			text   strings.Builder
			finish string
			calls  = map[int]*model.ToolCall{}
			order  []int
		)
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				yield(nil, fmt.Errorf("model stream: %w", err))
				return
			}
			if u := chunk.Usage; u != nil {
				usage = model.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
				if d := u.PromptTokensDetails; d != nil {
					usage.CachedPromptTokens = d.CachedTokens
				}
			}
			for _, choice := range chunk.Choices {
				if choice.FinishReason != "" {
					finish = string(choice.FinishReason)
				}
				if d := choice.Delta.Content; d != "" {
					text.WriteString(d)
					if !yield(&model.Response{Partial: true, Message: model.Message{Role: model.RoleAssistant, Content: d}}, nil) {
						return
					}
				}
				for i, tc := range choice.Delta.ToolCalls {
					idx := i
					if tc.Index != nil {
						idx = *tc.Index
					}
					c, ok := calls[idx]
					if !ok {
						c = &model.ToolCall{}
						calls[idx] = c
						order = append(order, idx)
					}
					if tc.ID != "" {
						c.ID = tc.ID
					}
					c.Name += tc.Function.Name
					c.Arguments += tc.Function.Arguments
				}
			}
		}
		msg := model.Message{Role: model.RoleAssistant, Content: text.String()}
		for _, idx := range order {
			msg.ToolCalls = append(msg.ToolCalls, *calls[idx])
		}
		yield(&model.Response{Message: msg, FinishReason: finish, Usage: usage}, nil)
	}
}

// toOpenAI translates a request into go-openai's types.
func toOpenAI(req *model.Request) openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{
		Model:         req.Model,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Messages:      make([]openai.ChatCompletionMessage, len(req.Messages)),
	}
	for i, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		out.Messages[i] = om
	}
	if len(req.Tools) > 0 {
		out.Tools = make([]openai.Tool, len(req.Tools))
		for i, f := range req.Tools {
			out.Tools[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
				Name: f.Name, Description: f.Description, Parameters: f.Parameters,
			}}
		}
	}
	return out
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

// propagateTransport adds headers from the request's context (the trace
// context) to a copy of each request.
type propagateTransport struct {
	base      http.RoundTripper
	propagate func(ctx context.Context, header http.Header)
}

func (t *propagateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	t.propagate(r.Context(), r.Header)
	return t.base.RoundTrip(r)
}
