package bindings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Names of the built-in sources. A binding's kind (value, env, file,
// session) is also the name its Spec reports as Source; configured sources
// may not reuse these names.
const (
	SourceValue   = "value"
	SourceEnv     = "env"
	SourceFile    = "file"
	SourceSession = "session"
)

// ErrNotSet reports that an environment variable or session value a
// binding names is unset or empty. An empty secure value is almost always
// a mistake, so it is treated like an unset one.
var ErrNotSet = errors.New("not set")

// ScopeIndependent is an optional interface for sources whose value
// depends only on the ref. The resolver then keys its cache by (source,
// ref) alone, so one value is shared by every session, subject, server,
// tool and parameter instead of being fetched once per scope.
type ScopeIndependent interface {
	ScopeIndependent() bool
}

// CacheScoper is an optional, finer-grained alternative to
// ScopeIndependent: CacheScope returns the part of scope the source's
// values depend on (for example only Subject, for a per-tenant vault). The
// resolver keys its cache by what it returns.
type CacheScoper interface {
	CacheScope(scope Scope) Scope
}

// SelfCaching is an optional interface for sources that answer from memory
// or keep their own freshness check (all the built-ins). The resolver then
// calls them on every Resolve: no caching, no single-flight, no negative
// cache and no call timeout, so they must answer promptly.
type SelfCaching interface {
	SelfCaching() bool
}

// Literal returns a Source that always answers value with sensitivity s.
// It is for code that builds bindings programmatically; configured
// literals ({value: ...}) are handled by the Binder.
func Literal(value string, s Sensitivity) Source { return literalSource{value: value, sensitivity: s} }

type literalSource struct {
	value       string
	sensitivity Sensitivity
}

func (l literalSource) Resolve(context.Context, Request) (Resolved, error) {
	return Resolved{Value: l.value, Sensitivity: l.sensitivity}, nil
}
func (literalSource) ScopeIndependent() bool { return true }
func (literalSource) SelfCaching() bool      { return true }

// literalTable serves the configured literal values. Refs are binding
// locations ("bindings[0].params.project_id") so that a Spec can name a
// literal without printing it.
type literalTable map[string]string

func (t literalTable) Resolve(_ context.Context, req Request) (Resolved, error) {
	v, ok := t[req.Ref]
	if !ok {
		return Resolved{}, fmt.Errorf("no literal value at %s", req.Ref)
	}
	return Resolved{Value: v, Sensitivity: Internal}, nil
}
func (literalTable) ScopeIndependent() bool { return true }
func (literalTable) SelfCaching() bool      { return true }

// LiteralString turns a config literal (string, number, bool, or a JSON-
// compatible list or map) into the string that is sent: strings as they
// are, everything else in its JSON spelling (42, 1.5, true, {"a":1}).
// Errors name the type, never the value.
func LiteralString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case nil:
		return "", errors.New("literal value is null")
	case []byte:
		return "", errors.New("literal value of type []byte is not supported")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("literal value of type %T cannot be turned into a string", v)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// EnvSource reads host environment variables; the ref is the variable
// name. Values are secret.
type EnvSource struct {
	// LookupEnv replaces os.LookupEnv (for tests); nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
}

// Resolve returns the variable's value, or an error wrapping ErrNotSet
// that names the variable when it is unset or empty.
func (e EnvSource) Resolve(_ context.Context, req Request) (Resolved, error) {
	lookup := e.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, ok := lookup(req.Ref)
	if !ok || v == "" {
		return Resolved{}, fmt.Errorf("environment variable %s: %w", req.Ref, ErrNotSet)
	}
	return Resolved{Value: v, Sensitivity: Secret}, nil
}

// ScopeIndependent reports true: a variable has one value for everyone.
func (EnvSource) ScopeIndependent() bool { return true }

// SelfCaching reports true: a lookup is a map read.
func (EnvSource) SelfCaching() bool { return true }

// FileSource reads a value from a file; the ref is the path (relative to
// the working directory). Contents are trimmed of surrounding white space.
// The file is re-read when its identity, size or modification time
// changes, so rotated credentials (including Kubernetes-style symlink
// swaps) are picked up; a rewrite that keeps size and mtime identical
// within the file system's timestamp granularity is not noticed.
// Values are secret. The zero value is ready to use.
type FileSource struct {
	mu    sync.Mutex
	files map[string]fileValue
}

type fileValue struct {
	info  os.FileInfo
	value string
}

// NewFileSource returns an empty FileSource.
func NewFileSource() *FileSource { return &FileSource{} }

// Resolve stats the file and returns the cached contents when it has not
// changed. Errors name the path, never the contents.
func (f *FileSource) Resolve(_ context.Context, req Request) (Resolved, error) {
	path := req.Ref
	info, err := os.Stat(path)
	if err != nil {
		return Resolved{}, fmt.Errorf("secret file: %w", err)
	}
	f.mu.Lock()
	cached, ok := f.files[path]
	f.mu.Unlock()
	if ok && sameVersion(cached.info, info) {
		return Resolved{Value: cached.value, Sensitivity: Secret}, nil
	}
	if !info.Mode().IsRegular() {
		return Resolved{}, fmt.Errorf("secret file %s is not a regular file", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Resolved{}, fmt.Errorf("secret file: %w", err)
	}
	value := strings.TrimSpace(string(raw))
	if value == "" {
		return Resolved{}, fmt.Errorf("secret file %s is empty", path)
	}
	f.mu.Lock()
	if f.files == nil {
		f.files = make(map[string]fileValue)
	}
	f.files[path] = fileValue{info: info, value: value}
	f.mu.Unlock()
	return Resolved{Value: value, Sensitivity: Secret}, nil
}

func sameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// ScopeIndependent reports true: a file has one content for everyone.
func (*FileSource) ScopeIndependent() bool { return true }

// SelfCaching reports true: the source checks freshness itself with one
// stat per call.
func (*FileSource) SelfCaching() bool { return true }

// SessionSource serves per-session values carried in the context (see
// ContextWithSessionValues); the ref is the value's name. Values are
// secret by default and are never cached by the resolver.
type SessionSource struct{}

// Resolve looks the name up in the context's session values. A missing or
// empty value is an error wrapping ErrNotSet that names the value.
func (SessionSource) Resolve(ctx context.Context, req Request) (Resolved, error) {
	v, ok := lookupSessionValue(ctx, req.Ref)
	if !ok {
		return Resolved{}, fmt.Errorf("session value %q: %w (set it with --bind %s=VALUE or the session's values)", req.Ref, ErrNotSet, req.Ref)
	}
	return Resolved{Value: v, Sensitivity: Secret}, nil
}

// CacheScope keeps only the session id: that is all the value depends on.
// It matters only for call statistics, since session values are not cached.
func (SessionSource) CacheScope(s Scope) Scope { return Scope{SessionID: s.SessionID} }

// SelfCaching reports true: session values are already in memory.
func (SessionSource) SelfCaching() bool { return true }

// SessionValues supplies the per-session values that bindings of kind
// session read. Implementations must be safe for concurrent use.
type SessionValues interface {
	Lookup(name string) (string, bool)
}

// MapValues is a SessionValues backed by a map. Do not modify it after
// handing it to a session.
type MapValues map[string]string

// Lookup returns the named value.
func (m MapValues) Lookup(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

type sessionValuesKey struct{}

// ContextWithSessionValues returns a context carrying v for session-kind
// bindings.
func ContextWithSessionValues(ctx context.Context, v SessionValues) context.Context {
	return context.WithValue(ctx, sessionValuesKey{}, v)
}

// SessionValuesFrom returns the session values in ctx, if any.
func SessionValuesFrom(ctx context.Context) (SessionValues, bool) {
	v, ok := ctx.Value(sessionValuesKey{}).(SessionValues)
	return v, ok && v != nil
}

func lookupSessionValue(ctx context.Context, name string) (string, bool) {
	values, ok := SessionValuesFrom(ctx)
	if !ok {
		return "", false
	}
	v, ok := values.Lookup(name)
	return v, ok && v != ""
}

// ParseBinds turns --bind NAME=VALUE arguments into session values. A
// later NAME replaces an earlier one. Errors give the argument's position
// and never echo it, since the argument holds a value.
func ParseBinds(args []string) (MapValues, error) {
	values := make(MapValues, len(args))
	for i, arg := range args {
		name, value, ok := strings.Cut(arg, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--bind argument %d: expected NAME=VALUE", i+1)
		}
		if value == "" {
			return nil, fmt.Errorf("--bind %s: value is empty", name)
		}
		values[name] = value
	}
	return values, nil
}
