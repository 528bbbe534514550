package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// argSchemas compiles tools' inputSchemas once per definition (by hash) to
// check model arguments before anything is sent. A schema that cannot be
// compiled (for example one with a remote $ref, which is never fetched) is
// not checked here; the server still validates.
type argSchemas struct {
	mu    sync.Mutex
	cache map[string]*jsonschema.Schema // DefHash -> schema (nil: not checkable)
}

type noRemoteLoader struct{}

func (noRemoteLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %q not loaded: remote references are never fetched", url)
}

func (a *argSchemas) get(hash string, schema json.RawMessage) *jsonschema.Schema {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.cache[hash]; ok {
		return s
	}
	if a.cache == nil {
		a.cache = map[string]*jsonschema.Schema{}
	}
	var compiled *jsonschema.Schema
	if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema)); err == nil {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(noRemoteLoader{})
		if err := c.AddResource("mem:///input.json", doc); err == nil {
			compiled, _ = c.Compile("mem:///input.json")
		}
	}
	if len(a.cache) > 10000 {
		clear(a.cache)
	}
	a.cache[hash] = compiled
	return compiled
}

// validate checks model arguments against a tool's inputSchema; the message
// is for the model (it only quotes the model's own input).
func (a *argSchemas) validate(hash string, schema json.RawMessage, args json.RawMessage) error {
	s := a.get(hash, schema)
	if s == nil {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("arguments do not match the tool's inputSchema: %s", strings.TrimSpace(err.Error()))
	}
	return nil
}
