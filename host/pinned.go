package host

import (
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/pinstate"
)

// Pinned tool definitions (package pins, host/internal/pinstate): with
// pins.enabled, a tool whose definition differs from the lock file's is
// hidden from the model and its calls are refused until an operator
// approves the change.

// PinsPath is where the lock file of cfg lives: pins.file, else
// agenthost.lock next to the configuration file (the working directory
// when the configuration has no file).
func PinsPath(cfg *config.Config) string { return pinstate.Path(cfg) }

// PinChange is a tool whose definition is not the pinned one: New when the
// tool is not pinned at all, with Diff the readable diff of the pinned
// definition against the current one.
type PinChange = pinstate.Change

// pinServers is what the pins commands read of the host.
func (h *Host) pinServers() pinstate.Servers {
	return pinstate.Servers{Snapshot: h.Server, Names: h.names}
}

// PinChanges compares the current definitions of the named servers (every
// configured server when none is named) with the lock file, reading it
// anew. Call after Connect.
func (h *Host) PinChanges(servers ...string) ([]PinChange, error) {
	return h.pins.Changes(h.pinServers(), servers...)
}

// RecordPins pins the tools of the named servers (every configured server
// when none is named) that the lock file does not know yet, and returns
// them. Changed definitions are left as they are: approve them with
// ApprovePins after reviewing PinChanges. Call after Connect; servers that
// could not be listed are skipped and named in the error.
func (h *Host) RecordPins(servers ...string) (recorded []PinChange, err error) {
	return h.pins.Record(h.pinServers(), servers...)
}

// ApprovePins accepts the current definitions of the named tools of one
// server (every changed or new tool of it when tools is empty) into the
// lock file, and returns what it accepted.
func (h *Host) ApprovePins(server string, tools ...string) ([]PinChange, error) {
	return h.pins.Approve(h.pinServers(), server, tools...)
}

// PinsFile is the lock file the host reads.
func (h *Host) PinsFile() string { return h.pins.File() }
