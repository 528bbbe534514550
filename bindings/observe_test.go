package bindings

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestResolveObserverCacheOutcomes(t *testing.T) {
	const canary = "CANARY-observe-9f3b"
	fail := errors.New("store down")
	vault := SourceFunc(func(_ context.Context, req Request) (Resolved, error) {
		if req.Ref == "broken/"+canary {
			return Resolved{}, fail
		}
		return Resolved{Value: canary, Sensitivity: Secret}, nil
	})
	var events []ResolveEvent
	r := newTestResolver(t, map[string]Source{"vault": vault, "env": EnvSource{LookupEnv: func(string) (string, bool) { return canary, true }}},
		WithClock(NewFakeClock(t0)),
		WithResolveObserver(func(_ context.Context, e ResolveEvent) { events = append(events, e) }))

	steps := []struct {
		source, ref string
		want        CacheOutcome
		failed      bool
	}{
		{"vault", "orders/" + canary, CacheMiss, false},
		{"vault", "orders/" + canary, CacheHit, false},
		{"vault", "broken/" + canary, CacheMiss, true},
		{"vault", "broken/" + canary, CacheNegative, true},
		{"env", "TOKEN_" + canary, CacheBypass, false},
		{"nosuch", "x", CacheMiss, true},
	}
	for i, st := range steps {
		_, err := r.Resolve(t.Context(), st.source, Request{Scope: scopeA, Ref: st.ref})
		if (err != nil) != st.failed {
			t.Fatalf("step %d: err = %v, want failed %v", i, err, st.failed)
		}
		if len(events) != i+1 {
			t.Fatalf("step %d: %d events, want %d", i, len(events), i+1)
		}
		e := events[i]
		if e.Cache != st.want || e.Failed != st.failed || e.Source != st.source ||
			e.Server != scopeA.Server || e.Tool != scopeA.Tool || e.Param != scopeA.Param || e.Start.IsZero() {
			t.Errorf("step %d: event %+v, want cache %s failed %v", i, e, st.want, st.failed)
		}
		if s := fmt.Sprintf("%#v", e); strings.Contains(s, canary) || strings.Contains(s, scopeA.Subject) || strings.Contains(s, scopeA.SessionID) {
			t.Errorf("step %d: the event holds a value, a ref, the subject or the session id: %s", i, s)
		}
	}
}
