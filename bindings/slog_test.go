package bindings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

type tokenHolder struct {
	Name  string
	Token string
}

type lazyToken struct{ v string }

func (l lazyToken) LogValue() slog.Value { return slog.StringValue("lazy " + l.v) }

type stringerToken struct{ v string }

func (s stringerToken) String() string { return "stringer " + s.v }

// forbidden lists the spellings of the canary that must never appear.
func forbidden(values ...string) []string {
	var out []string
	for _, v := range values {
		out = append(out, spellings(v)...)
	}
	return out
}

func TestRedactingHandler(t *testing.T) {
	const pin = "90817263"
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			opts := &slog.HandlerOptions{Level: slog.LevelDebug}
			var inner slog.Handler = slog.NewJSONHandler(&buf, opts)
			if format == "text" {
				inner = slog.NewTextHandler(&buf, opts)
			}
			r := NewRedactor()
			logger := slog.New(NewRedactingHandler(inner, r))

			// Attributes bound before the canary is registered must still
			// be masked once it is.
			early := logger.With("early", canary).WithGroup("g"+canary).With("k", "v")
			r.Add(canary)
			r.Add(pin)

			logger.Debug("message holds "+canary, "plain", "visible-text")
			early.Debug("early attrs")
			logger.Debug("kinds",
				"str", "x"+canary+"x",
				slog.Group("grp", "inner", canary, slog.Group("deeper", "v", canary)),
				"err", fmt.Errorf("wrapped: %w", errors.New("call failed with "+canary)),
				"struct", tokenHolder{Name: "n", Token: canary},
				"ptr", &tokenHolder{Token: canary},
				"map", map[string]any{"t": canary},
				"bytes", []byte("b "+canary),
				"raw", json.RawMessage(`{"t":`+mustJSON(canary)+`}`),
				"valuer", lazyToken{canary},
				"stringer", stringerToken{canary},
				"int", 90817263,
				canary, "secret as key",
			)
			logger.WithGroup("req").With("auth", "Bearer "+canary).Debug("with")

			out := buf.String()
			for _, f := range forbidden(canary, pin) {
				if strings.Contains(out, f) {
					t.Fatalf("output holds %q:\n%s", f, out)
				}
			}
			// Four log lines: each must still be written, with markers.
			if lines := strings.Count(out, "\n"); lines != 4 {
				t.Fatalf("%d lines, want 4:\n%s", lines, out)
			}
			if n := strings.Count(out, RedactedText); n < 16 {
				t.Fatalf("only %d markers:\n%s", n, out)
			}
			if !strings.Contains(out, "visible-text") {
				t.Fatalf("ordinary text lost:\n%s", out)
			}
			if format == "json" {
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					if !json.Valid([]byte(line)) {
						t.Fatalf("invalid JSON line: %s", line)
					}
				}
			}
		})
	}
}

func TestRedactingHandlerLevel(t *testing.T) {
	var buf bytes.Buffer
	r := NewRedactor()
	h := NewRedactingHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}), r)
	if h.Enabled(t.Context(), slog.LevelDebug) || !h.Enabled(t.Context(), slog.LevelInfo) {
		t.Fatal("Enabled does not follow the inner handler")
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
