package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// static serves values given in its configuration, with per-tenant
// overrides. It is a complete plugin: its main would be
//
//	func main() { sdk.Serve(&static{}) }
type static struct {
	mu     sync.RWMutex
	values map[string]string
}

func (s *static) Describe() sdk.Info {
	return sdk.Info{Name: "static", Version: "1.0.0", ConfigSchema: json.RawMessage(`{
		"type": "object",
		"properties": {"values": {"type": "object", "additionalProperties": {"type": "string"}}},
		"required": ["values"],
		"additionalProperties": false
	}`)}
}

func (s *static) Configure(_ context.Context, config map[string]any) error {
	values := map[string]string{}
	for ref, v := range config["values"].(map[string]any) { // shape checked by the schema
		values[ref] = v.(string)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = values
	return nil
}

func (s *static) Resolve(_ context.Context, req sdk.Request) (sdk.Result, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if v, ok := s.values[req.Subject+"/"+req.Ref]; ok { // a tenant's own value wins
		return sdk.Result{Value: v}, nil
	}
	if v, ok := s.values[req.Ref]; ok {
		return sdk.Result{Value: v}, nil
	}
	return sdk.Result{}, fmt.Errorf("%w %q", sdk.ErrUnknownRef, req.Ref)
}

// A plugin is a main package whose main is one call to Serve.
func Example() {
	// In the plugin binary:
	//
	//	func main() { sdk.Serve(&static{}) }
	//
	// Here the same implementation is driven directly.
	src := &static{}
	_ = src.Configure(context.Background(), map[string]any{"values": map[string]any{
		"orders/token":      "default-token",
		"acme/orders/token": "acme-token",
	}})
	for _, subject := range []string{"acme", "globex"} {
		res, _ := src.Resolve(context.Background(), sdk.Request{Subject: subject, Ref: "orders/token"})
		fmt.Println(subject, res.Value)
	}
	_, err := src.Resolve(context.Background(), sdk.Request{Ref: "nope"})
	fmt.Println(errors.Is(err, sdk.ErrUnknownRef))
	// Output:
	// acme acme-token
	// globex default-token
	// true
}

// The main of a plugin binary.
func ExampleServe() {
	sdk.Serve(&static{})
}
