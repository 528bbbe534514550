package bindings_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/agenthost/agenthost/bindings"
)

// A chat backend plugs in its own credential service as a Source and
// gives every chat session its own values.
func Example_chatBackend() {
	// The backend's credential service: one short-lived token per tenant.
	tenantTokens := bindings.SourceFunc(func(ctx context.Context, req bindings.Request) (bindings.Resolved, error) {
		return bindings.Resolved{
			Value:       "tok-" + req.Subject + "-" + req.Ref,
			Expiry:      time.Now().Add(time.Hour), // refreshed in the background before then
			Sensitivity: bindings.Secret,
		}, nil
	})

	binder, err := bindings.NewBinder([]bindings.Binding{{
		Server: "orders",
		Params: map[string]bindings.ParamBinding{
			"project_id": {Value: "retail-prod"},
			"instance":   {Session: "instance"},
			"token":      {Source: "tenant-tokens", Ref: "orders"},
		},
	}}, map[string]bindings.Source{"tenant-tokens": tenantTokens})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer binder.Close()

	// One chat session of tenant "acme", with a value from the backend's
	// own session store.
	ctx := bindings.ContextWithSessionValues(context.Background(),
		bindings.MapValues{"instance": "db-eu-3"})
	scope := bindings.Scope{SessionID: "chat-42", Subject: "acme", Server: "orders", Tool: "execute_sql"}

	// The tool's secureInputSchema properties and required list.
	params := map[string]json.RawMessage{
		"project_id": json.RawMessage(`{"type":"string"}`),
		"instance":   json.RawMessage(`{"type":"string"}`),
		"token":      json.RawMessage(`{"type":"string"}`),
	}
	values, err := binder.Resolve(ctx, scope, params, []string{"project_id", "instance", "token"})
	if err != nil {
		fmt.Println(err)
		return
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Printf("%s=%s (%s)\n", name, values[name].Value, values[name].Sensitivity)
	}

	// Every resolved value is now masked in the backend's logs.
	plain := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	logger := slog.New(bindings.NewRedactingHandler(plain, binder.Redactor()))
	logger.Info("calling tool", "token", values["token"].Value, "instance", values["instance"].Value)

	// A session without the value cannot bind "instance": the tool would be
	// hidden from the model, and a call is refused before any source runs.
	fmt.Println(binder.CanBind(context.Background(), "orders", "execute_sql", "instance"))
	_, err = binder.Resolve(context.Background(), scope, params, []string{"instance"})
	fmt.Println(err)

	// Output:
	// instance=db-eu-3 (secret)
	// project_id=retail-prod (internal)
	// token=tok-acme-orders (secret)
	// level=INFO msg="calling tool" token=[REDACTED] instance=[REDACTED]
	// false
	// no value bound for required secure parameter(s): instance
}
