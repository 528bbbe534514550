package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// NewRedactingHandler wraps inner so that the message, every attribute key
// and value (inside groups too), errors, and values of any type (as
// printed with %+v, or marshalled to JSON) have registered values masked
// before inner sees them. Attributes added with WithAttrs are redacted
// against the values registered at the time a record is handled, not only
// those known when WithAttrs was called.
func NewRedactingHandler(inner slog.Handler, r *Redactor) slog.Handler {
	return &redactingHandler{base: inner, r: r}
}

type redactingHandler struct {
	base slog.Handler
	r    *Redactor
	ops  []handlerOp // WithAttrs/WithGroup calls, replayed on base

	derived atomic.Pointer[derivedHandler]
}

// handlerOp is one WithAttrs (attrs != nil) or WithGroup call.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

type derivedHandler struct {
	version uint64
	h       slog.Handler
}

func (h *redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.base.Enabled(ctx, level)
}

func (h *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(h.r, a))
		return true
	})
	return h.inner().Handle(ctx, out)
}

// inner returns base with the recorded WithAttrs/WithGroup calls applied,
// redacted against the current values; it is rebuilt only when a value
// has been added since.
func (h *redactingHandler) inner() slog.Handler {
	if len(h.ops) == 0 {
		return h.base
	}
	v := h.r.version()
	if d := h.derived.Load(); d != nil && d.version == v {
		return d.h
	}
	inner := h.base
	for _, op := range h.ops {
		if op.attrs == nil {
			inner = inner.WithGroup(h.r.Redact(op.group))
			continue
		}
		attrs := make([]slog.Attr, len(op.attrs))
		for i, a := range op.attrs {
			attrs[i] = redactAttr(h.r, a)
		}
		inner = inner.WithAttrs(attrs)
	}
	h.derived.Store(&derivedHandler{version: v, h: inner})
	return inner
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: attrs})
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}

func (h *redactingHandler) with(op handlerOp) *redactingHandler {
	ops := make([]handlerOp, len(h.ops), len(h.ops)+1)
	copy(ops, h.ops)
	return &redactingHandler{base: h.base, r: h.r, ops: append(ops, op)}
}

func redactAttr(r *Redactor, a slog.Attr) slog.Attr {
	a.Key = r.Redact(a.Key)
	a.Value = redactValue(r, a.Value)
	return a
}

func redactValue(r *Redactor, v slog.Value) slog.Value {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(r.Redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]slog.Attr, len(group))
		for i, a := range group {
			out[i] = redactAttr(r, a)
		}
		return slog.GroupValue(out...)
	case slog.KindAny:
		return redactAny(r, v)
	default:
		// Numbers, bools, times and durations: a numeric secret (a PIN, an
		// account number) must not slip through as an int.
		if s := v.String(); r.ContainsSecret(s) {
			return slog.StringValue(r.Redact(s))
		}
		return v
	}
}

func redactAny(r *Redactor, v slog.Value) slog.Value {
	if r.load() == nil {
		return v
	}
	switch x := v.Any().(type) {
	case error:
		if s := x.Error(); r.ContainsSecret(s) {
			return slog.StringValue(r.Redact(s))
		}
		return v
	case []byte:
		// Handlers would print these as base64 (JSON) or Go syntax; treat
		// them as the text they almost always are.
		if r.ContainsSecret(bytesView(x)) {
			return slog.StringValue(r.Redact(string(x)))
		}
		return v
	case json.RawMessage:
		return slog.AnyValue(r.RedactJSON(x))
	}
	// Check both spellings handlers use: TextHandler prints %+v,
	// JSONHandler marshals.
	if s := fmt.Sprintf("%+v", v.Any()); r.ContainsSecret(s) {
		return slog.StringValue(r.Redact(s))
	}
	if b, err := json.Marshal(v.Any()); err == nil && r.ContainsSecret(bytesView(b)) {
		return slog.StringValue(r.Redact(string(b)))
	}
	return v
}
