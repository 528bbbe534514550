package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// version is the plugin's reported version.
const version = "0.1.0"

const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "JSON or YAML file mapping refs to values"}
  },
  "required": ["path"],
  "additionalProperties": false
}`

type fileSource struct {
	mu      sync.RWMutex
	path    string
	stamp   fileStamp
	entries map[string]entry
	loadErr error // the current file's problem, if it is invalid
}

func newFileSource() *fileSource { return &fileSource{} }

func (s *fileSource) Describe() sdk.Info {
	return sdk.Info{Name: "agenthost-cred-file", Version: version, ConfigSchema: json.RawMessage(configSchema)}
}

// Configure loads the file once so a bad path or file is a configuration
// error, reported at start rather than at the first call.
func (s *fileSource) Configure(_ context.Context, config map[string]any) error {
	p, _ := config["path"].(string)
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("path: %w", err)
	}
	stamp, entries, err := load(abs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.path, s.stamp, s.entries, s.loadErr = abs, stamp, entries, nil
	return nil
}

func (s *fileSource) Resolve(ctx context.Context, req sdk.Request) (sdk.Result, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, err
	}
	entries, err := s.current()
	if err != nil {
		return sdk.Result{}, err
	}
	e, ok := entries[req.Ref]
	if !ok {
		return sdk.Result{}, fmt.Errorf("%w %q", sdk.ErrUnknownRef, req.Ref)
	}
	value, ok := e.Tenants[req.Subject]
	if !ok {
		if !e.HasValue {
			return sdk.Result{}, fmt.Errorf("%w %q for subject %q: the entry has tenant values but none for this subject and no default", sdk.ErrUnknownRef, req.Ref, req.Subject)
		}
		value = e.Value
	}
	return sdk.Result{Value: value, Expiry: e.Expiration, Sensitivity: sdk.Secret}, nil
}

// current returns the entries, re-reading the file first if it changed.
func (s *fileSource) current() (map[string]entry, error) {
	s.mu.RLock()
	path, stamp, entries, loadErr := s.path, s.stamp, s.entries, s.loadErr
	s.mu.RUnlock()
	if path == "" {
		return nil, sdk.ErrNotConfigured
	}
	now, err := statFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	if now == stamp {
		return entries, loadErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if now == s.stamp { // another call reloaded it meanwhile
		return s.entries, s.loadErr
	}
	newStamp, newEntries, err := load(path)
	if err != nil {
		// Fail closed: serving the old contents could resurrect a value the
		// operator just removed.
		s.stamp, s.entries, s.loadErr = now, nil, fmt.Errorf("credentials file changed and is now invalid: %w", err)
		return nil, s.loadErr
	}
	s.stamp, s.entries, s.loadErr = newStamp, newEntries, nil
	return newEntries, nil
}

// fileStamp identifies one version of the file cheaply.
type fileStamp struct {
	modTime time.Time
	size    int64
	ino     uint64
}

func statFile(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	if !fi.Mode().IsRegular() {
		return fileStamp{}, fmt.Errorf("%s is not a regular file", path)
	}
	return fileStamp{modTime: fi.ModTime(), size: fi.Size(), ino: inode(fi)}, nil
}

// maxFileSize keeps a wrong path (a log file, a device) from being slurped.
const maxFileSize = 16 << 20

func load(path string) (fileStamp, map[string]entry, error) {
	stamp, err := statFile(path)
	if err != nil {
		return fileStamp{}, nil, fmt.Errorf("credentials file: %w", err)
	}
	if stamp.size > maxFileSize {
		return fileStamp{}, nil, fmt.Errorf("credentials file %s is larger than %d bytes", path, maxFileSize)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return fileStamp{}, nil, fmt.Errorf("credentials file: %w", err)
	}
	entries, err := parse(raw)
	if err != nil {
		return fileStamp{}, nil, fmt.Errorf("credentials file %s: %w", path, err)
	}
	return stamp, entries, nil
}

// entry is one ref's values. Its decoders accept a bare string or an
// object, from JSON and YAML alike; their errors name keys and refs but
// never values.
type entry struct {
	Value      string
	HasValue   bool
	Expiration time.Time
	Tenants    map[string]string
}

func parse(raw []byte) (map[string]entry, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return map[string]entry{}, nil
	}
	var entries map[string]entry
	if trimmed[0] == '{' {
		var rawEntries map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&rawEntries); err != nil {
			return nil, jsonError(err)
		}
		if dec.More() {
			return nil, errors.New("invalid JSON: trailing data after the top-level object")
		}
		entries = make(map[string]entry, len(rawEntries))
		for ref, r := range rawEntries {
			var e entry
			if err := json.Unmarshal(r, &e); err != nil {
				return nil, fmt.Errorf("ref %q: %w", ref, err)
			}
			entries[ref] = e
		}
	} else {
		var root yaml.Node
		if err := yaml.Unmarshal(trimmed, &root); err != nil {
			return nil, fmt.Errorf("invalid YAML: %w", err)
		}
		if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
			return nil, errors.New("the file must be a mapping from refs to values")
		}
		top := root.Content[0]
		entries = make(map[string]entry, len(top.Content)/2)
		for i := 0; i+1 < len(top.Content); i += 2 {
			ref := top.Content[i].Value
			if _, dup := entries[ref]; dup {
				return nil, fmt.Errorf("line %d: ref %q appears twice", top.Content[i].Line, ref)
			}
			var e entry
			if err := e.fromYAML(top.Content[i+1]); err != nil {
				return nil, fmt.Errorf("ref %q (line %d): %w", ref, top.Content[i+1].Line, err)
			}
			entries[ref] = e
		}
	}
	for ref, e := range entries {
		if !e.HasValue && len(e.Tenants) == 0 {
			return nil, fmt.Errorf("ref %q has neither a value nor tenant values", ref)
		}
	}
	return entries, nil
}

// jsonError drops the parts of encoding/json errors that can quote input.
func jsonError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("invalid JSON (syntax error at byte %d)", syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON (the file ends in the middle of a value)")
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("invalid JSON: %s has the wrong type (%s)", typ.Field, typ.Value)
	}
	return err
}

func (e *entry) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		if err := json.Unmarshal(b, &e.Value); err != nil {
			return errors.New("value is not a valid JSON string")
		}
		e.HasValue = true
		return nil
	case len(b) > 0 && b[0] == '{':
	default:
		return errors.New("entry must be a string or an object with value, expiration and tenants")
	}
	var obj struct {
		Value      *string           `json:"value"`
		Expiration string            `json:"expiration"`
		Tenants    map[string]string `json:"tenants"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s must be a string (or, for tenants, an object of strings)", te.Field)
		}
		// DisallowUnknownFields reports `json: unknown field "name"`: a key,
		// not a value.
		return err
	}
	if obj.Value != nil {
		e.Value, e.HasValue = *obj.Value, true
	}
	e.Tenants = obj.Tenants
	return e.setExpiration(obj.Expiration)
}

func (e *entry) fromYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return errors.New("value is empty")
		}
		e.Value, e.HasValue = n.Value, true
		return nil
	case yaml.MappingNode:
	default:
		return errors.New("entry must be a string or a mapping with value, expiration and tenants")
	}
	var expiration string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch key {
		case "value":
			if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
				return errors.New("value must be a string")
			}
			e.Value, e.HasValue = val.Value, true
		case "expiration":
			if val.Kind != yaml.ScalarNode {
				return errors.New("expiration must be an RFC 3339 time")
			}
			expiration = val.Value
		case "tenants":
			if val.Kind != yaml.MappingNode {
				return errors.New("tenants must be a mapping from subject to value")
			}
			e.Tenants = make(map[string]string, len(val.Content)/2)
			for j := 0; j+1 < len(val.Content); j += 2 {
				tenant, tv := val.Content[j].Value, val.Content[j+1]
				if tv.Kind != yaml.ScalarNode || tv.Tag == "!!null" {
					return fmt.Errorf("tenant %q: value must be a string", tenant)
				}
				e.Tenants[tenant] = tv.Value
			}
		default:
			return fmt.Errorf("unknown key %q (want value, expiration, tenants)", key)
		}
	}
	return e.setExpiration(expiration)
}

func (e *entry) setExpiration(s string) error {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return errors.New("expiration is not an RFC 3339 time (like 2030-01-01T00:00:00Z)")
	}
	e.Expiration = t
	return nil
}
