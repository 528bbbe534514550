package host

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/pins"
)

// Pinned tool definitions (package pins): with pins.enabled, a tool whose
// definition differs from the one recorded in the lock file is hidden from
// the model and its calls are refused (not available) until an operator
// approves the change; with pins.newTools: hide, so is a tool the lock
// file does not know. The check runs with the taint check (taint.go): once
// per server snapshot and lock version, so every list refresh is checked
// again and calls only look their tool up.

// pinState is the host's lock file and what it enforces.
type pinState struct {
	path    string
	enforce bool // pins.enabled
	hideNew bool // pins.newTools: hide

	mu   sync.Mutex // serialises changes to the lock
	lock atomic.Pointer[pins.Lock]
	gen  atomic.Uint64 // bumps when lock changes

	// The lock file is read again when it changes on disk (an operator
	// ran `agenthost pins approve` beside a running host), looked at no
	// more often than every reloadEvery.
	reloadEvery time.Duration
	nextLook    atomic.Int64 // unix nanoseconds
	stamp       atomic.Pointer[fileStamp]
}

// fileStamp identifies a version of the lock file on disk.
type fileStamp struct {
	mod  time.Time
	size int64
}

// pinsReloadEvery is how often a running host looks whether the lock file
// changed.
const pinsReloadEvery = time.Second

// statLock returns the lock file's stamp (zero when it does not exist).
func statLock(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

// maybeReload reads the lock file again when it changed on disk since it
// was last read; an unreadable new version keeps the old one (and is
// logged).
func (p *pinState) maybeReload(logger *slog.Logger) {
	now := time.Now().UnixNano()
	next := p.nextLook.Load()
	if now < next || !p.nextLook.CompareAndSwap(next, now+int64(p.reloadEvery)) {
		return
	}
	st := statLock(p.path)
	if old := p.stamp.Load(); old != nil && old.mod.Equal(st.mod) && old.size == st.size {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stamp.Store(&st)
	lock, err := pins.Load(p.path)
	if err != nil {
		logger.Error("the pins lock file changed and cannot be read; keeping the pins read before", "path", p.path, "err", err)
		return
	}
	p.lock.Store(lock)
	p.gen.Add(1)
}

// PinsPath is where the lock file of cfg lives: pins.file, else
// agenthost.lock next to the configuration file (the working directory
// when the configuration has no file).
func PinsPath(cfg *config.Config) string {
	if cfg.Pins.File != "" {
		return cfg.Pins.File
	}
	dir := "."
	if cfg.File != "" {
		dir = filepath.Dir(cfg.File)
	}
	return filepath.Join(dir, pins.DefaultFile)
}

func newPinState(cfg *config.Config) (*pinState, error) {
	p := &pinState{path: PinsPath(cfg), enforce: cfg.Pins.Enabled, hideNew: cfg.Pins.NewTools == config.PinsNewToolsHide}
	lock, err := pins.Load(p.path)
	if err != nil {
		if !p.enforce {
			// Not enforced: an unreadable lock only matters to the pins
			// commands, which report it.
			lock = &pins.Lock{}
		} else {
			return nil, fmt.Errorf("pins.enabled: %w", err)
		}
	}
	p.lock.Store(lock)
	p.gen.Store(1)
	p.reloadEvery = pinsReloadEvery
	st := statLock(p.path)
	p.stamp.Store(&st)
	p.nextLook.Store(time.Now().Add(p.reloadEvery).UnixNano())
	return p, nil
}

// definition is the pinned part of a catalog tool.
func definition(ct *CatalogTool) pins.Definition {
	t := ct.Tool
	return pins.Definition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
		SecureInputSchema: t.SecureInputSchema, Annotations: t.Annotations}
}

// Reasons a pinned check hides a tool.
const (
	pinChangedReason = "its definition changed since it was pinned (review: agenthost pins diff; accept: agenthost pins approve SERVER TOOL; docs/cli.md)"
	pinNewReason     = "it is not pinned yet and pins.newTools is hide (review and pin it: agenthost pins diff, agenthost pins approve SERVER TOOL; docs/cli.md)"
)

// pinHidden checks every tool of snap against the lock: nil unless
// pinning is enforced and some tool is changed (or new, under hide).
func (h *Host) pinHidden(snap *ServerSnapshot) map[*CatalogTool]string {
	p := h.pins
	if p == nil || !p.enforce {
		return nil
	}
	lock := p.lock.Load()
	var hidden map[*CatalogTool]string
	for _, ct := range snap.Tools {
		reason := ""
		switch lock.Check(snap.Name, definition(ct)) {
		case pins.Changed:
			reason = pinChangedReason
		case pins.New:
			if p.hideNew {
				reason = pinNewReason
			}
		}
		if reason != "" {
			if hidden == nil {
				hidden = map[*CatalogTool]string{}
			}
			hidden[ct] = reason
		}
	}
	return hidden
}

// pinGen is the lock's version (0 without pinning).
func (h *Host) pinGen() uint64 {
	if h.pins == nil || !h.pins.enforce {
		return 0
	}
	h.pins.maybeReload(h.logger)
	return h.pins.gen.Load()
}

// toolPinHidden is the reason ct, a tool of snap, is hidden by pinning,
// or "".
func (h *Host) toolPinHidden(snap *ServerSnapshot, ct *CatalogTool) string {
	if h.pins == nil || !h.pins.enforce {
		return ""
	}
	return h.taintOf(snap, h.redactor.Version()).pinned[ct]
}

// PinChange is a tool whose definition is not the pinned one.
type PinChange struct {
	Server string
	Tool   string
	// New: the tool is not pinned at all; otherwise its definition changed.
	New bool
	// Diff is the readable diff of the pinned definition against the
	// current one (for a new tool: the whole definition, as added lines).
	Diff string
}

// PinChanges compares the current definitions of the named servers (every
// configured server when none is named) with the lock file, reading it
// anew. Call after Connect.
func (h *Host) PinChanges(servers ...string) ([]PinChange, error) {
	lock, err := pins.Load(h.pinsPath())
	if err != nil {
		return nil, err
	}
	var out []PinChange
	for _, name := range h.pinServers(servers) {
		snap := h.Server(name)
		if snap == nil {
			return nil, fmt.Errorf("%w: %s", ErrUnknownServer, name)
		}
		for _, ct := range snap.Tools {
			def := definition(ct)
			switch lock.Check(name, def) {
			case pins.Changed:
				e, _ := lock.Entry(name, def.Name)
				out = append(out, PinChange{Server: name, Tool: def.Name, Diff: pins.Diff(e.Definition, def)})
			case pins.New:
				out = append(out, PinChange{Server: name, Tool: def.Name, New: true, Diff: pins.Diff(nil, def)})
			}
		}
	}
	return out, nil
}

// RecordPins pins the tools of the named servers (every configured server
// when none is named) that the lock file does not know yet, and returns
// them. Changed definitions are left as they are: approve them with
// ApprovePins after reviewing PinChanges. Call after Connect; servers that
// could not be listed are skipped and named in the error.
func (h *Host) RecordPins(servers ...string) (recorded []PinChange, err error) {
	return h.updatePins(servers, func(c PinChange) bool { return c.New })
}

// ApprovePins accepts the current definitions of the named tools of one
// server (every changed or new tool of it when tools is empty) into the
// lock file, and returns what it accepted.
func (h *Host) ApprovePins(server string, tools ...string) ([]PinChange, error) {
	if h.Server(server) == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	if len(tools) > 0 {
		snap := h.Server(server)
		for _, t := range tools {
			if snap.Tool(t) == nil {
				return nil, fmt.Errorf("%w: server %s does not list a tool %q", ErrToolUnavailable, server, t)
			}
		}
	}
	return h.updatePins([]string{server}, func(c PinChange) bool { return len(tools) == 0 || slices.Contains(tools, c.Tool) })
}

// updatePins pins the current definition of every changed or new tool of
// servers that accept selects, saves the lock file and starts enforcing it.
func (h *Host) updatePins(servers []string, accept func(PinChange) bool) ([]PinChange, error) {
	p := h.pins
	p.mu.Lock()
	defer p.mu.Unlock()
	changes, err := h.PinChanges(servers...)
	if err != nil {
		return nil, err
	}
	lock, err := pins.Load(p.path)
	if err != nil {
		return nil, err
	}
	var done []PinChange
	for _, c := range changes {
		if !accept(c) {
			continue
		}
		if ct := h.Server(c.Server).Tool(c.Tool); ct != nil {
			lock.Pin(c.Server, definition(ct))
			done = append(done, c)
		}
	}
	var unlisted []string
	for _, name := range h.pinServers(servers) {
		if snap := h.Server(name); snap != nil && snap.Status != StatusConnected {
			unlisted = append(unlisted, name)
		}
	}
	if len(done) > 0 {
		if err := lock.Save(p.path); err != nil {
			return nil, err
		}
		st := statLock(p.path)
		p.stamp.Store(&st)
		p.lock.Store(lock)
		p.gen.Add(1)
	}
	if len(unlisted) > 0 {
		return done, fmt.Errorf("%w: not listed, so not pinned: %v", ErrServerUnavailable, unlisted)
	}
	return done, nil
}

func (h *Host) pinsPath() string { return h.pins.path }

// PinsFile is the lock file the host reads.
func (h *Host) PinsFile() string { return h.pins.path }

func (h *Host) pinServers(servers []string) []string {
	if len(servers) > 0 {
		return servers
	}
	return h.names
}
