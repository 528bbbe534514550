// Package otelobs owns agenthost's OpenTelemetry instrumentation: an
// implementation of host.Observer that records a span tree per turn and a
// small set of metrics with the GenAI and MCP semantic conventions, and the
// set-up of the OTel SDK with OTLP exporters from the `observability:`
// config section and the standard OTEL_* environment variables.
//
// The span tree of a turn:
//
//	invoke_agent agenthost                       (the turn)
//	├── chat gpt-4.1-mini                        (a model request, CLIENT)
//	└── execute_tool execute_sql                 (a tool call)
//	    ├── event agenthost.approval             (the decision)
//	    ├── resolve_credential vault             (a credential resolution)
//	    └── tools/call execute_sql               (the MCP request, CLIENT)
//
// Nothing secret is recorded: the hooks it implements are given names,
// counts, outcomes and risk metadata only (see host.Observer), error texts
// are never recorded (error.type only), only the W3C trace context is
// propagated (never baggage), and the resource carries the service name and
// version and OTEL_RESOURCE_ATTRIBUTES, never the process's command line.
//
// A program that does not import this package does not link OpenTelemetry.
package otelobs

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host"
)

// ScopeName is the instrumentation scope of agenthost's spans and metrics.
const ScopeName = "github.com/agenthost/agenthost/host"

// Attribute keys agenthost defines beyond the semantic conventions.
const (
	AttrServer              = attribute.Key("agenthost.mcp.server")
	AttrExposedName         = attribute.Key("agenthost.tool.exposed_name")
	AttrStep                = attribute.Key("agenthost.step")
	AttrTurnEndReason       = attribute.Key("agenthost.turn.end_reason")
	AttrTurnSteps           = attribute.Key("agenthost.turn.steps")
	AttrToolIsError         = attribute.Key("agenthost.tool.is_error")
	AttrDecision            = attribute.Key("agenthost.approval.decision")
	AttrOutcome             = attribute.Key("agenthost.approval.outcome")
	AttrRules               = attribute.Key("agenthost.approval.rules")
	AttrApproversRequired   = attribute.Key("agenthost.approval.approvers_required")
	AttrVotes               = attribute.Key("agenthost.approval.votes")
	AttrRemembered          = attribute.Key("agenthost.approval.remembered")
	AttrWaitMs              = attribute.Key("agenthost.approval.wait_ms")
	AttrCredentialSource    = attribute.Key("agenthost.credential.source")
	AttrCredentialParam     = attribute.Key("agenthost.credential.param")
	AttrCredentialCache     = attribute.Key("agenthost.credential.cache")
	AttrRiskPrefix          = "agenthost.risk."
	EventApproval           = "agenthost.approval"
	SpanCredentialPrefix    = "resolve_credential "
	defaultProvider         = "openai"
	defaultAgentName        = "agenthost"
	errorTypeToolError      = "tool_error"
	errorTypeResolveFailure = "resolve_failed"
)

// Options tune an Observer.
type Options struct {
	// ProviderName is gen_ai.provider.name of model requests (default
	// "openai": the default model client speaks the OpenAI API).
	ProviderName string
}

// Observer implements host.Observer with OpenTelemetry.
type Observer struct {
	tracer   trace.Tracer
	prop     propagation.TraceContext
	provider string

	toolCalls        metric.Int64Counter
	decisions        metric.Int64Counter
	approvalWait     metric.Float64Histogram
	credentials      metric.Int64Counter
	pluginRestarts   metric.Int64Counter
	serverReconnects metric.Int64Counter
	modelDuration    metric.Float64Histogram
	tokenUsage       metric.Int64Histogram
	mcpDuration      metric.Float64Histogram
}

var _ host.Observer = (*Observer)(nil)

// New returns an Observer over the given providers (a backend that set up
// the OTel SDK itself passes its own; see Setup for the SDK from config).
func New(tp trace.TracerProvider, mp metric.MeterProvider, opts Options) (*Observer, error) {
	o := &Observer{tracer: tp.Tracer(ScopeName), provider: opts.ProviderName}
	if o.provider == "" {
		o.provider = defaultProvider
	}
	m := mp.Meter(ScopeName)
	var err error
	mk := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	mk(func() (e error) {
		o.toolCalls, e = m.Int64Counter("agenthost.tool.calls", metric.WithUnit("{call}"),
			metric.WithDescription("Tool calls, by server and error.type (absent when the call returned a result)."))
		return
	})
	mk(func() (e error) {
		o.decisions, e = m.Int64Counter("agenthost.approval.decisions", metric.WithUnit("{decision}"),
			metric.WithDescription("Approval decisions, by decision and outcome."))
		return
	})
	mk(func() (e error) {
		o.approvalWait, e = m.Float64Histogram("agenthost.approval.wait.duration", metric.WithUnit("s"),
			metric.WithDescription("Time an ask decision waited for its approvers, by outcome."))
		return
	})
	mk(func() (e error) {
		o.credentials, e = m.Int64Counter("agenthost.credential.resolutions", metric.WithUnit("{resolution}"),
			metric.WithDescription("Credential resolutions, by source and cache outcome (hit, miss, bypass, negative): the cache hit ratio is hit / (hit + miss)."))
		return
	})
	mk(func() (e error) {
		o.pluginRestarts, e = m.Int64Counter("agenthost.plugin.restarts", metric.WithUnit("{restart}"),
			metric.WithDescription("Credential plugin restarts after a crash, by source."))
		return
	})
	mk(func() (e error) {
		o.serverReconnects, e = m.Int64Counter("agenthost.server.reconnects", metric.WithUnit("{reconnect}"),
			metric.WithDescription("MCP server reconnects after a lost or failed connection, by server."))
		return
	})
	mk(func() (e error) {
		o.modelDuration, e = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
			metric.WithDescription("GenAI operation duration."),
			metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
		return
	})
	mk(func() (e error) {
		o.tokenUsage, e = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used."),
			metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
		return
	})
	mk(func() (e error) {
		o.mcpDuration, e = m.Float64Histogram("mcp.client.operation.duration", metric.WithUnit("s"),
			metric.WithDescription("The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received."),
			metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300))
		return
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// StartTurn implements host.Observer: the turn is an invoke_agent span,
// the child of an incoming trace context (TurnInfo.TraceParent) or of the
// span ctx carries.
func (o *Observer) StartTurn(ctx context.Context, t host.TurnInfo) (context.Context, func(host.TurnEnd)) {
	if t.TraceParent != "" {
		carrier := propagation.MapCarrier{"traceparent": t.TraceParent}
		if t.TraceState != "" {
			carrier["tracestate"] = t.TraceState
		}
		if sc := trace.SpanContextFromContext(o.prop.Extract(context.Background(), carrier)); sc.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	ctx, span := o.tracer.Start(ctx, "invoke_agent "+defaultAgentName, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(turnAttrs(t)...))
	return ctx, func(e host.TurnEnd) {
		span.SetAttributes(turnEndAttrs(e)...)
		if e.Reason == host.EndError {
			span.SetAttributes(semconv.ErrorTypeKey.String(errorType(e.Kind)))
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

func turnAttrs(t host.TurnInfo) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(defaultAgentName),
		semconv.GenAIConversationID(t.SessionID),
	}
	if t.Model != "" {
		a = append(a, semconv.GenAIRequestModel(t.Model))
	}
	return a
}

func turnEndAttrs(e host.TurnEnd) []attribute.KeyValue {
	return []attribute.KeyValue{
		AttrTurnEndReason.String(e.Reason),
		AttrTurnSteps.Int(e.Steps),
		semconv.GenAIUsageInputTokens(e.InputTokens),
		semconv.GenAIUsageOutputTokens(e.OutputTokens),
	}
}

// StartModelRequest implements host.Observer: a chat CLIENT span with the
// GenAI conventions; the duration and token metrics are recorded when it
// ends.
func (o *Observer) StartModelRequest(ctx context.Context, r host.ModelRequestInfo) (context.Context, func(host.ModelRequestEnd)) {
	start := time.Now()
	name := "chat"
	if r.Model != "" {
		name += " " + r.Model
	}
	ctx, span := o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(o.modelAttrs(r)...))
	return ctx, func(e host.ModelRequestEnd) {
		span.SetAttributes(modelEndAttrs(e)...)
		base := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(o.provider), semconv.GenAIRequestModel(r.Model)}
		if e.Failed {
			et := "_OTHER"
			if e.Cancelled {
				et = "cancelled"
			}
			span.SetAttributes(semconv.ErrorTypeKey.String(et))
			span.SetStatus(codes.Error, "")
			base = append(base, semconv.ErrorTypeKey.String(et))
		}
		span.End()
		bg := context.WithoutCancel(ctx)
		o.modelDuration.Record(bg, time.Since(start).Seconds(), metric.WithAttributes(base...))
		if !e.Failed {
			o.tokenUsage.Record(bg, int64(e.InputTokens), metric.WithAttributes(append(base, semconv.GenAITokenTypeInput)...))
			o.tokenUsage.Record(bg, int64(e.OutputTokens), metric.WithAttributes(append(base, semconv.GenAITokenTypeOutput)...))
		}
	}
}

func (o *Observer) modelAttrs(r host.ModelRequestInfo) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(o.provider),
		semconv.GenAIRequestModel(r.Model),
		AttrStep.Int(r.Step),
	}
}

func modelEndAttrs(e host.ModelRequestEnd) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(e.InputTokens),
		semconv.GenAIUsageOutputTokens(e.OutputTokens),
	}
	if e.FinishReason != "" {
		a = append(a, semconv.GenAIResponseFinishReasons(e.FinishReason))
	}
	return a
}

// StartToolCall implements host.Observer: an execute_tool span with the
// GenAI and MCP conventions.
func (o *Observer) StartToolCall(ctx context.Context, c host.ToolCallInfo) (context.Context, func(host.ToolCallEnd)) {
	ctx, span := o.tracer.Start(ctx, "execute_tool "+c.Tool, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(toolAttrs(c)...))
	return ctx, func(e host.ToolCallEnd) {
		et := toolErrorType(e)
		attrs := []attribute.KeyValue{AttrServer.String(c.Server)}
		if et != "" {
			span.SetAttributes(semconv.ErrorTypeKey.String(et))
			span.SetStatus(codes.Error, "")
			attrs = append(attrs, semconv.ErrorTypeKey.String(et))
		}
		if e.ErrorKind == "" {
			span.SetAttributes(AttrToolIsError.Bool(e.IsError))
		}
		span.End()
		o.toolCalls.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attrs...))
	}
}

func toolAttrs(c host.ToolCallInfo) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(c.Tool),
		semconv.GenAIToolTypeKey.String("extension"),
		semconv.McpMethodNameToolsCall,
		AttrServer.String(c.Server),
		semconv.GenAIConversationID(c.SessionID),
	}
	if c.CallID != "" {
		a = append(a, semconv.GenAIToolCallID(c.CallID))
	}
	if c.ExposedName != "" {
		a = append(a, AttrExposedName.String(c.ExposedName))
	}
	return a
}

// toolErrorType is a tool call's error.type: the host's error kind
// (denied, binding, unavailable, ...) or tool_error for an isError result,
// as the MCP conventions say.
func toolErrorType(e host.ToolCallEnd) string {
	switch {
	case e.ErrorKind != "":
		return errorType(e.ErrorKind)
	case e.IsError:
		return errorTypeToolError
	}
	return ""
}

func errorType(k host.Kind) string {
	if k == "" {
		return "_OTHER"
	}
	return string(k)
}

// StartMCPRequest implements host.Observer: the MCP request is a CLIENT
// span named "{mcp.method.name} {target}" with the MCP conventions.
func (o *Observer) StartMCPRequest(ctx context.Context, r host.MCPRequestInfo) (context.Context, func(host.MCPRequestEnd)) {
	start := time.Now()
	name := r.Method
	if r.Tool != "" {
		name += " " + r.Tool
	}
	ctx, span := o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(mcpAttrs(r)...))
	return ctx, func(e host.MCPRequestEnd) {
		attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(r.Method), AttrServer.String(r.Server)}
		if et := mcpErrorType(e); et != "" {
			span.SetAttributes(semconv.ErrorTypeKey.String(et))
			span.SetStatus(codes.Error, "")
			attrs = append(attrs, semconv.ErrorTypeKey.String(et))
		}
		if e.RPCCode != 0 {
			span.SetAttributes(semconv.RPCResponseStatusCode(strconv.Itoa(e.RPCCode)))
		}
		span.End()
		o.mcpDuration.Record(context.WithoutCancel(ctx), time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
}

func mcpAttrs(r host.MCPRequestInfo) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.McpMethodNameKey.String(r.Method),
		AttrServer.String(r.Server),
	}
	if r.Tool != "" {
		a = append(a, semconv.GenAIToolName(r.Tool), semconv.GenAIOperationNameExecuteTool)
	}
	if r.SessionID != "" {
		a = append(a, semconv.McpSessionID(r.SessionID))
	}
	if r.ProtocolVersion != "" {
		a = append(a, semconv.McpProtocolVersion(r.ProtocolVersion))
	}
	switch r.Transport {
	case "stdio":
		a = append(a, semconv.NetworkTransportPipe)
	case "http", "sse":
		a = append(a, semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"))
	}
	return a
}

// mcpErrorType is an MCP request's error.type: the JSON-RPC error code,
// tool_error for an isError result, _OTHER for a failure without a code.
func mcpErrorType(e host.MCPRequestEnd) string {
	switch {
	case e.RPCCode != 0:
		return strconv.Itoa(e.RPCCode)
	case e.Failed:
		return "_OTHER"
	case e.IsError:
		return errorTypeToolError
	}
	return ""
}

// Decision implements host.Observer: a span event on the tool call's span,
// and the decision and wait metrics.
func (o *Observer) Decision(ctx context.Context, d host.DecisionInfo) {
	attrs := decisionAttrs(d)
	trace.SpanFromContext(ctx).AddEvent(EventApproval, trace.WithAttributes(attrs...))
	bg := context.WithoutCancel(ctx)
	decision, outcome := string(d.Result.Decision.Action), string(d.Result.Outcome)
	o.decisions.Add(bg, 1, metric.WithAttributes(AttrDecision.String(decision), AttrOutcome.String(outcome)))
	if d.Result.Decision.Action == "ask" && !d.Result.Remembered {
		o.approvalWait.Record(bg, d.Wait.Seconds(), metric.WithAttributes(AttrOutcome.String(outcome)))
	}
}

// decisionAttrs are the approval event's attributes: the decision, its
// outcome, the rules that matched, the approvers required, the votes cast
// (approver id and vote; never an approver's note), and each effective risk
// field with where it came from.
func decisionAttrs(d host.DecisionInfo) []attribute.KeyValue {
	r := d.Result
	risk := r.Decision.Risk
	votes := make([]string, 0, len(r.Votes))
	for _, v := range r.Votes {
		votes = append(votes, v.ApproverID+":"+string(v.Decision))
	}
	rules := r.Decision.Rules
	if rules == nil {
		rules = []string{}
	}
	sideEffects := risk.SideEffects
	if sideEffects == nil {
		sideEffects = []string{}
	}
	return []attribute.KeyValue{
		AttrDecision.String(string(r.Decision.Action)),
		AttrOutcome.String(string(r.Outcome)),
		AttrRules.StringSlice(rules),
		AttrApproversRequired.Int(r.Decision.Approvers),
		AttrVotes.StringSlice(votes),
		AttrRemembered.Bool(r.Remembered),
		AttrWaitMs.Int64(d.Wait.Milliseconds()),
		attribute.String(AttrRiskPrefix+"category", string(risk.Category)),
		attribute.String(AttrRiskPrefix+"category.source", string(risk.Source.Category)),
		attribute.String(AttrRiskPrefix+"risk_level", string(risk.RiskLevel)),
		attribute.String(AttrRiskPrefix+"risk_level.source", string(risk.Source.RiskLevel)),
		attribute.String(AttrRiskPrefix+"blast_radius", string(risk.BlastRadius)),
		attribute.String(AttrRiskPrefix+"blast_radius.source", string(risk.Source.BlastRadius)),
		attribute.String(AttrRiskPrefix+"reversibility", string(risk.Reversibility)),
		attribute.String(AttrRiskPrefix+"reversibility.source", string(risk.Source.Reversibility)),
		attribute.StringSlice(AttrRiskPrefix+"side_effects", sideEffects),
		attribute.String(AttrRiskPrefix+"side_effects.source", string(risk.Source.SideEffects)),
		attribute.String(AttrRiskPrefix+"approval_recommendation", string(risk.ApprovalRecommendation)),
		attribute.String(AttrRiskPrefix+"approval_recommendation.source", string(risk.Source.ApprovalRecommendation)),
		attribute.Int(AttrRiskPrefix+"min_trust_level", risk.MinTrustLevel),
		attribute.String(AttrRiskPrefix+"min_trust_level.source", string(risk.Source.MinTrustLevel)),
		attribute.Bool(AttrRiskPrefix+"unclassified", risk.Unclassified),
	}
}

// CredentialResolved implements host.Observer: a span for the resolution,
// the child of the tool call that needed the value, placed at the time it
// ran, and the resolutions metric. Neither holds the value or the
// binding's ref.
func (o *Observer) CredentialResolved(ctx context.Context, e bindings.ResolveEvent) {
	attrs := credentialAttrs(e)
	_, span := o.tracer.Start(ctx, SpanCredentialPrefix+e.Source, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(e.Start), trace.WithAttributes(attrs...))
	if e.Failed {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorTypeResolveFailure))
		span.SetStatus(codes.Error, "")
	}
	span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
	o.credentials.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(
		AttrCredentialSource.String(e.Source), AttrCredentialCache.String(string(e.Cache))))
}

func credentialAttrs(e bindings.ResolveEvent) []attribute.KeyValue {
	return []attribute.KeyValue{
		AttrCredentialSource.String(e.Source),
		AttrCredentialCache.String(string(e.Cache)),
		AttrCredentialParam.String(e.Param),
		AttrServer.String(e.Server),
		semconv.GenAIToolName(e.Tool),
	}
}

// TraceContext implements host.Observer: the W3C traceparent and
// tracestate of the span ctx carries (never baggage).
func (o *Observer) TraceContext(ctx context.Context) (traceparent, tracestate string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	carrier := propagation.MapCarrier{}
	o.prop.Inject(ctx, carrier)
	return carrier["traceparent"], carrier["tracestate"]
}

// PluginRestarted counts a credential plugin restart.
func (o *Observer) PluginRestarted(ctx context.Context, source string) {
	o.pluginRestarts.Add(ctx, 1, metric.WithAttributes(AttrCredentialSource.String(source)))
}

// ServerReconnected counts an MCP server reconnect.
func (o *Observer) ServerReconnected(ctx context.Context, server string) {
	o.serverReconnects.Add(ctx, 1, metric.WithAttributes(AttrServer.String(server)))
}
