package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func BenchmarkResolverCached(b *testing.B) {
	src := SourceFunc(func(context.Context, Request) (Resolved, error) {
		return Resolved{Value: "tok-value", Sensitivity: Secret}, nil
	})
	r := NewResolver(map[string]Source{"vault": src})
	defer r.Close()
	ctx := context.Background()
	req := Request{Scope: scopeA, Ref: "orders/token"}
	if _, err := r.Resolve(ctx, "vault", req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Resolve(ctx, "vault", req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := r.Resolve(ctx, "vault", req); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	if n := r.TotalCalls(); n != 1 {
		b.Fatalf("source calls = %d, want 1", n)
	}
}

func BenchmarkBinderResolveCached(b *testing.B) {
	src := SourceFunc(func(_ context.Context, req Request) (Resolved, error) {
		return Resolved{Value: "tok-" + req.Subject, Sensitivity: Secret}, nil
	})
	binder, err := NewBinder([]Binding{{Server: "orders", Params: map[string]ParamBinding{
		"project_id": {Value: "retail-prod"},
		"token":      {Source: "vault", Ref: "token"},
	}}}, map[string]Source{"vault": src})
	if err != nil {
		b.Fatal(err)
	}
	defer binder.Close()
	params := map[string]json.RawMessage{"project_id": nil, "token": nil}
	scope := Scope{SessionID: "s", Subject: "acme", Server: "orders", Tool: "q"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := binder.Resolve(ctx, scope, params, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// redactFixture is a 4 KB log-like text and a Redactor with 20 secrets,
// two of which occur in the text.
func redactFixture(b *testing.B) (*Redactor, string) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := NewRedactor()
	var secrets []string
	for i := range 20 {
		s := fmt.Sprintf("sk-%d-%x", i, rng.Uint64())
		secrets = append(secrets, s)
		r.Add(s)
	}
	var sb strings.Builder
	words := []string{"time=2030-01-02T03:04:05Z", "level=DEBUG", "msg=\"calling tool\"", "server=orders", "tool=execute_sql", "args={\"query\":\"select 1\"}", "duration=12ms"}
	for sb.Len() < 4096 {
		sb.WriteString(words[rng.IntN(len(words))])
		sb.WriteByte(' ')
		if sb.Len() > 1000 && sb.Len() < 1100 {
			sb.WriteString(secrets[3] + " ")
		}
		if sb.Len() > 3000 && sb.Len() < 3100 {
			sb.WriteString(secrets[17] + " ")
		}
	}
	return r, sb.String()[:4096]
}

func BenchmarkRedact4KB20Secrets(b *testing.B) {
	r, text := redactFixture(b)
	clean := strings.ReplaceAll(text, "sk-", "xx-")
	if !r.ContainsSecret(text) || r.ContainsSecret(clean) {
		b.Fatal("fixture is wrong")
	}
	b.Run("two matches", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Redact(text)
		}
	})
	b.Run("no match", func(b *testing.B) {
		b.SetBytes(int64(len(clean)))
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Redact(clean)
		}
	})
	b.Run("prefilter", func(b *testing.B) {
		old := r.state.Load()
		st := *old
		st.filter = newPrefilter(st.patterns)
		r.state.Store(&st)
		defer r.state.Store(old)
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			_ = r.Redact(text)
		}
	})
}

func BenchmarkRedactJSON(b *testing.B) {
	r, text := redactFixture(b)
	clean := strings.ReplaceAll(text, "sk-", "xx-")
	for _, c := range []struct{ name, text string }{{"two matches", text}, {"no match", clean}} {
		raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": c.text}}})
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				_ = r.RedactJSON(raw)
			}
		})
	}
}
