package bindings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/internal/glob"
)

// ErrUnbound is the sentinel for *UnboundError.
var ErrUnbound = errors.New("secure parameter not bound")

// ErrResolve is the sentinel for *ResolveError.
var ErrResolve = errors.New("secure parameter could not be resolved")

// UnboundError reports required secure parameters that no binding fills
// (or whose session-kind binding names a value the session does not have).
type UnboundError struct {
	Params []string // sorted
}

// Error names the unbound parameters (never a value).
func (e *UnboundError) Error() string {
	return "no value bound for required secure parameter(s): " + strings.Join(e.Params, ", ")
}

// Is makes errors.Is(err, ErrUnbound) true.
func (e *UnboundError) Is(target error) bool { return target == ErrUnbound }

// ResolveError reports a source that failed to supply a bound parameter.
// Err (from the Resolver) names the source and ref.
type ResolveError struct {
	Param  string
	Source string
	Err    error

	redactor *Redactor
}

// Error names the parameter and says why its source failed, redacted.
func (e *ResolveError) Error() string {
	// The source's message is passed through the redactor in case a source
	// was careless enough to include a value it knows.
	return fmt.Sprintf("secure parameter %q: %s", e.Param, e.redactor.Redact(e.Err.Error()))
}

// Unwrap returns the source's error.
func (e *ResolveError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrResolve) true.
func (e *ResolveError) Is(target error) bool { return target == ErrResolve }

// Spec says where a bound parameter's value comes from. It holds no value
// and is safe to print: for literals Ref is the binding's location in the
// config, not the literal.
type Spec struct {
	Source      string      `json:"source"` // SourceValue, SourceEnv, SourceFile, SourceSession or a configured source name
	Ref         string      `json:"ref"`
	Sensitivity Sensitivity `json:"sensitivity"` // from the binding's sensitivity:, else the kind's default
	Binding     int         `json:"binding"`     // index of the bindings entry that matched
}

// String renders e.g. "env:ORDERS_REGION (secret)".
func (s Spec) String() string {
	return fmt.Sprintf("%s:%s (%s)", s.Source, s.Ref, s.Sensitivity)
}

// Binder decides which binding fills each secure parameter and resolves
// the values through its Resolver, registering internal and secret values
// with its Redactor.
//
// Matching: a binding applies to (server, tool, param) when its server is
// equal to the server name or matches it as a glob (package internal/glob:
// * matches any run of characters, / included; empty means
// every server), one of its tools globs matches the tool (no tools means
// every tool) and it lists the parameter by exact, case-sensitive name.
// Among the bindings that apply, the most specific wins: an exact server
// name beats a server glob; then a tool named exactly beats a tool glob
// (or no tools); then, between equals, the later entry in the list wins,
// so a general default can come first and be overridden below it.
type Binder struct {
	bindings []compiledBinding
	resolver *Resolver
	redactor *Redactor

	// memo caches Lookup. A plain map under a read lock: a sync.Map would
	// box every struct key on every lookup (an allocation per call).
	memoMu sync.RWMutex
	memo   map[lookupKey]lookupResult

	// protectedSession: session value names some binding takes at
	// sensitivity internal or secret.
	protectedSession map[string]bool
}

type compiledBinding struct {
	server string
	tools  []string
	params map[string]Spec
}

type lookupKey struct{ server, tool, param string }

type lookupResult struct {
	spec Spec
	ok   bool
}

// maxMemo bounds the Lookup memo; tools come from servers, which need not
// be trusted to keep their catalogues small.
const maxMemo = 4096

// NewBinder validates the bindings and builds a Binder whose Resolver
// knows the built-in sources plus the named extra sources (configured
// plugins, or sources an embedding application supplies). The Binder owns
// the Resolver; Close it when done. Errors name the binding entry and
// parameter, never a value.
func NewBinder(bindings []Binding, sources map[string]Source, opts ...Option) (*Binder, error) {
	cfg := newSettings(opts)
	literals := literalTable{}
	all := map[string]Source{
		SourceValue:   literals,
		SourceEnv:     EnvSource{},
		SourceFile:    NewFileSource(),
		SourceSession: SessionSource{},
	}
	for name, src := range sources {
		if _, builtin := all[name]; builtin {
			return nil, fmt.Errorf("source %q: the name is reserved for a built-in source", name)
		}
		if src == nil {
			return nil, fmt.Errorf("source %q is nil", name)
		}
		all[name] = src
	}

	b := &Binder{redactor: cfg.redactor}
	if b.redactor == nil {
		b.redactor = NewRedactor()
	}
	for i, bc := range bindings {
		where := fmt.Sprintf("bindings[%d]", i)
		if err := validPattern(bc.Server); err != nil {
			return nil, fmt.Errorf("%s: server pattern %q: %w", where, bc.Server, err)
		}
		for _, t := range bc.Tools {
			if err := validPattern(t); err != nil {
				return nil, fmt.Errorf("%s: tool pattern %q: %w", where, t, err)
			}
		}
		cb := compiledBinding{server: bc.Server, tools: slices.Clone(bc.Tools), params: make(map[string]Spec, len(bc.Params))}
		// Sorted, so that the first error reported is always the same.
		for _, name := range slices.Sorted(maps.Keys(bc.Params)) {
			pb := bc.Params[name]
			loc := fmt.Sprintf("%s.params.%s", where, name)
			if name == "" {
				return nil, fmt.Errorf("%s: empty parameter name", where)
			}
			spec, literal, err := specFor(pb, loc, all)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", loc, err)
			}
			spec.Binding = i
			if spec.Source == SourceValue {
				literals[spec.Ref] = literal
			}
			if spec.Source == SourceSession && spec.Sensitivity >= Internal {
				if b.protectedSession == nil {
					b.protectedSession = map[string]bool{}
				}
				b.protectedSession[spec.Ref] = true
			}
			cb.params[name] = spec
		}
		b.bindings = append(b.bindings, cb)
	}
	// The Binder registers values itself, with the binding's sensitivity,
	// so the Resolver gets no redactor.
	resolverOpts := append(slices.Clone(opts), WithRedactor(nil))
	b.resolver = NewResolver(all, resolverOpts...)
	return b, nil
}

// specFor checks one parameter binding.
func specFor(pb ParamBinding, loc string, sources map[string]Source) (Spec, string, error) {
	var spec Spec
	var literal string
	kinds := 0
	if pb.Value != nil {
		kinds++
		v, err := LiteralString(pb.Value)
		if err != nil {
			return spec, "", err
		}
		spec, literal = Spec{Source: SourceValue, Ref: loc, Sensitivity: Internal}, v
	}
	if pb.Session != "" {
		kinds++
		spec = Spec{Source: SourceSession, Ref: pb.Session, Sensitivity: Secret}
	}
	if pb.Env != "" {
		kinds++
		spec = Spec{Source: SourceEnv, Ref: pb.Env, Sensitivity: Secret}
	}
	if pb.File != "" {
		kinds++
		spec = Spec{Source: SourceFile, Ref: pb.File, Sensitivity: Secret}
	}
	if pb.Source != "" {
		kinds++
		if _, ok := sources[pb.Source]; !ok {
			return spec, "", fmt.Errorf("unknown source %q", pb.Source)
		}
		if _, builtin := builtinKinds[pb.Source]; builtin {
			return spec, "", fmt.Errorf("source %q is a built-in kind; write {%s: ...} instead", pb.Source, pb.Source)
		}
		spec = Spec{Source: pb.Source, Ref: pb.Ref, Sensitivity: Secret}
	}
	if msg := pb.RefProblem(); msg != "" {
		return spec, "", errors.New("ref " + msg)
	}
	switch kinds {
	case 0:
		return spec, "", errors.New("no value, session, env, file or source given")
	case 1:
	default:
		return spec, "", errors.New("more than one of value, session, env, file and source given")
	}
	if pb.Sensitivity != "" {
		s, err := ParseSensitivity(pb.Sensitivity)
		if err != nil {
			return spec, "", err
		}
		spec.Sensitivity = s
	}
	return spec, literal, nil
}

var builtinKinds = map[string]struct{}{SourceValue: {}, SourceEnv: {}, SourceFile: {}, SourceSession: {}}

// Lookup returns the binding for a secure parameter of a server's tool.
func (b *Binder) Lookup(server, tool, param string) (Spec, bool) {
	k := lookupKey{server, tool, param}
	b.memoMu.RLock()
	r, found := b.memo[k]
	b.memoMu.RUnlock()
	if found {
		return r.spec, r.ok
	}
	spec, ok := b.lookup(server, tool, param)
	b.memoMu.Lock()
	if b.memo == nil {
		b.memo = map[lookupKey]lookupResult{}
	}
	if len(b.memo) < maxMemo {
		b.memo[k] = lookupResult{spec, ok}
	}
	b.memoMu.Unlock()
	return spec, ok
}

func (b *Binder) lookup(server, tool, param string) (Spec, bool) {
	var best Spec
	bestServer, bestTool := 0, 0
	found := false
	for _, cb := range b.bindings {
		spec, ok := cb.params[param]
		if !ok {
			continue
		}
		sr := matchRank(cb.server, server)
		if sr == 0 {
			continue
		}
		tr := 1 // no tools: every tool, ranked as a glob
		if len(cb.tools) > 0 {
			tr = 0
			for _, t := range cb.tools {
				tr = max(tr, matchRank(t, tool))
			}
			if tr == 0 {
				continue
			}
		}
		// Later entries win ties, hence >=.
		if !found || sr > bestServer || (sr == bestServer && tr >= bestTool) {
			best, bestServer, bestTool, found = spec, sr, tr, true
		}
	}
	return best, found
}

// matchRank is 2 for an exact name, 1 for a glob match (an empty pattern
// matches everything), 0 for no match.
func matchRank(pattern, name string) int {
	switch {
	case pattern == name:
		return 2
	case pattern == "":
		return 1
	}
	if glob.Match(pattern, name) {
		return 1
	}
	return 0
}

// Bound splits params into those a binding exists for and those without
// one, keeping their order. It does not look at session values; see
// BoundFor and CanBind.
func (b *Binder) Bound(server, tool string, params []string) (bound, unbound []string) {
	for _, p := range params {
		if _, ok := b.Lookup(server, tool, p); ok {
			bound = append(bound, p)
		} else {
			unbound = append(unbound, p)
		}
	}
	return bound, unbound
}

// BoundFor is Bound with CanBind's view: a session-kind binding counts as
// bound only when the session in ctx has the value.
func (b *Binder) BoundFor(ctx context.Context, server, tool string, params []string) (bound, unbound []string) {
	for _, p := range params {
		if b.CanBind(ctx, server, tool, p) {
			bound = append(bound, p)
		} else {
			unbound = append(unbound, p)
		}
	}
	return bound, unbound
}

// CanBind reports whether the parameter has a binding that can supply a
// value for the session in ctx: any binding except a session-kind one
// whose value the session lacks (or has empty). Other kinds may still
// fail when resolved (an unset variable, a missing file); that is a
// configuration error reported at call time, not a reason to hide a tool.
func (b *Binder) CanBind(ctx context.Context, server, tool, param string) bool {
	spec, ok := b.Lookup(server, tool, param)
	if !ok {
		return false
	}
	if spec.Source == SourceSession {
		_, ok = lookupSessionValue(ctx, spec.Ref)
	}
	return ok
}

// Resolve supplies the secure arguments of one tool call. params maps each
// declared secure parameter to its schema (passed on to the source);
// required lists the required ones. Every parameter that can be bound
// (see CanBind) is resolved, optional ones included; an optional one that
// cannot be bound is left out. If a required one cannot be bound the
// result is an *UnboundError and no source is called. A failing source
// gives a *ResolveError: built-in sources are resolved first, in name
// order, then values from other sources are fetched concurrently and the
// first failure in name order is reported. The returned Resolved values
// carry the binding's sensitivity.
func (b *Binder) Resolve(ctx context.Context, scope Scope, params map[string]json.RawMessage, required []string) (map[string]Resolved, error) {
	// Small fixed buffers keep the usual call (a few parameters, cached
	// values) free of allocations besides the result.
	var nameBuf [8]string
	names := nameBuf[:0]
	for name := range params {
		names = append(names, name)
	}
	names = append(names, required...)
	slices.Sort(names)
	names = slices.Compact(names)

	var localBuf, remoteBuf [8]resolveJob
	local, remote := localBuf[:0], remoteBuf[:0]
	var unbound []string
	for _, name := range names {
		spec, ok := b.Lookup(scope.Server, scope.Tool, name)
		if ok && spec.Source == SourceSession {
			_, ok = lookupSessionValue(ctx, spec.Ref)
		}
		if !ok { // see CanBind
			if slices.Contains(required, name) {
				unbound = append(unbound, name)
			}
			continue
		}
		if b.resolver.selfCaching(spec.Source) {
			local = append(local, resolveJob{name, spec})
		} else {
			remote = append(remote, resolveJob{name, spec})
		}
	}
	if len(unbound) > 0 {
		return nil, &UnboundError{Params: unbound}
	}

	out := make(map[string]Resolved, len(local)+len(remote))
	// Built-in sources answer from memory: resolve them inline. Only
	// several remote sources are worth the goroutines.
	for _, j := range local {
		v, err := b.resolveJob(ctx, scope, params, j)
		if err != nil {
			return nil, err
		}
		out[j.param] = v
	}
	if len(remote) <= 1 {
		for _, j := range remote {
			v, err := b.resolveJob(ctx, scope, params, j)
			if err != nil {
				return nil, err
			}
			out[j.param] = v
		}
		return out, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	values := make([]Resolved, len(remote))
	errs := make([]error, len(remote))
	var wg sync.WaitGroup
	for i, j := range remote {
		wg.Go(func() {
			values[i], errs[i] = b.resolveJob(ctx, scope, params, j)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// Report the root failure, not a sibling cancelled because of it.
	var firstErr error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if firstErr == nil || (errors.Is(firstErr, context.Canceled) && !errors.Is(err, context.Canceled)) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for i, j := range remote {
		out[j.param] = values[i]
	}
	return out, nil
}

// resolveJob is one parameter to resolve and its binding.
type resolveJob struct {
	param string
	spec  Spec
}

func (b *Binder) resolveJob(ctx context.Context, scope Scope, params map[string]json.RawMessage, j resolveJob) (Resolved, error) {
	req := Request{Scope: scope, Ref: j.spec.Ref, Schema: params[j.param]}
	req.Param = j.param
	v, err := b.resolver.Resolve(ctx, j.spec.Source, req)
	if err != nil {
		return Resolved{}, &ResolveError{Param: j.param, Source: j.spec.Source, Err: err, redactor: b.redactor}
	}
	v.Sensitivity = j.spec.Sensitivity
	if v.Sensitivity >= Internal {
		b.redactor.Add(v.Value)
	}
	return v, nil
}

// Invalidate drops the cached value for the parameter identified by scope
// (Server, Tool, Param, plus the session part), e.g. after the server
// rejected it, so the next Resolve asks the source again.
func (b *Binder) Invalidate(scope Scope) {
	spec, ok := b.Lookup(scope.Server, scope.Tool, scope.Param)
	if !ok {
		return
	}
	b.resolver.Invalidate(spec.Source, spec.Ref, scope)
}

// ForgetSession drops cached values held for a session that has ended.
func (b *Binder) ForgetSession(sessionID string) { b.resolver.ForgetSession(sessionID) }

// ProtectsSessionValue reports whether a binding takes the session value
// name at sensitivity internal or secret: a host registers such a value
// with the redactor as soon as a session has it, before any call resolves
// it.
func (b *Binder) ProtectsSessionValue(name string) bool { return b.protectedSession[name] }

// Redactor returns the Redactor resolved values are registered with.
func (b *Binder) Redactor() *Redactor { return b.redactor }

// Resolver returns the Binder's Resolver (for Invalidate and statistics).
func (b *Binder) Resolver() *Resolver { return b.resolver }

// Close stops the Resolver's background work.
func (b *Binder) Close() error { return b.resolver.Close() }

// validPattern checks a binding's server or tool pattern; empty means any.
func validPattern(p string) error {
	if p == "" {
		return nil
	}
	return glob.Validate(p)
}
