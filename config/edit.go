package config

import (
	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/config/internal/serveredit"
)

// Errors of the server editing functions, for callers that branch.
var (
	// ErrServerExists: AddServer was given a name the file has already.
	ErrServerExists = serveredit.ErrServerExists
	// ErrNoSuchServer: RemoveServer was given a name the file does not
	// have.
	ErrNoSuchServer = serveredit.ErrNoSuchServer
	// ErrCannotEdit: the file's format or shape cannot be edited without
	// losing what a person wrote (TOML; a mcpServers that is not a
	// mapping).
	ErrCannotEdit = serveredit.ErrCannotEdit
)

// ServerEntry is a server as `agenthost mcp add` writes it: the fields a
// `claude mcp add` command line gives, in the order they are written.
// Values are written as given (a ${VAR} reference stays one).
type ServerEntry struct {
	Type    Transport         `json:"type,omitempty" yaml:"type,omitempty"`
	Command string            `json:"command,omitempty" yaml:"command,omitempty"`
	Args    []string          `json:"args,omitempty" yaml:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	URL     string            `json:"url,omitempty" yaml:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
}

// AddServer adds the server name to mcpServers of the configuration file
// at path, creating the file (YAML, mode 0600: env and headers may hold
// secrets) when it does not exist. The rest of the file is kept: a JSON
// file byte for byte, a YAML file with its comments (re-indented by the
// YAML encoder). The edited file must load (Parse) before it replaces the
// old one, atomically and with its mode; on any error the file is
// untouched. Errors: ErrServerExists, ErrCannotEdit, *Error.
func AddServer(path, name string, e ServerEntry) error {
	return serveredit.Add(path, name, e, parsedServers)
}

// RemoveServer removes the server name from mcpServers of the
// configuration file at path, keeping the rest as AddServer does.
// Errors: ErrNoSuchServer, ErrCannotEdit, *Error.
func RemoveServer(path, name string) error {
	return serveredit.Remove(path, name, parsedServers)
}

// parsedServers loads an edited file as Parse does and names its servers.
func parsedServers(data []byte, format, path string) ([]string, error) {
	cfg, err := Parse(data, format, path)
	if err != nil {
		return nil, err
	}
	return problem.SortedKeys(cfg.MCPServers), nil
}
