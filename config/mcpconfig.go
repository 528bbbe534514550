package config

import (
	"encoding/json"
	"path/filepath"
	"slices"

	"github.com/agenthost/agenthost/config/internal/document"
	"github.com/agenthost/agenthost/config/internal/problem"
)

// LoadMCPServers reads the servers of an MCP configuration file in Claude
// Desktop's or Claude Code's shape (`run --mcp-config FILE`): only its
// mcpServers are read, every other key is left alone. Paths are relative
// to the file's folder, ${VAR} references are expanded, and the
// administrator's managed policy applies to the servers as it does to
// the configuration's own. Every error is an [*Error].
func LoadMCPServers(path string) (map[string]*Server, error) {
	format, ok := document.Format(filepath.Ext(path))
	if !ok {
		format = "json" // .mcp.json and friends; any other name is read as JSON
	}
	data, err := document.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := document.Parse(data, format)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), Err: err}
	}
	only, err := json.Marshal(map[string]any{"mcpServers": doc["mcpServers"]})
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), Err: err}
	}
	cfg, err := build(only, "json", path, false)
	if err != nil {
		return nil, err
	}
	cfg.resolvePaths(filepath.Dir(path))
	if err := cfg.ApplyManaged(); err != nil {
		return nil, err
	}
	return cfg.MCPServers, nil
}

// AddServers adds servers read from the file from to c (see
// LoadMCPServers); a server name c already has is an error naming both.
func (c *Config) AddServers(from string, servers map[string]*Server) error {
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, dup := c.MCPServers[name]; dup {
			return &Error{File: from, Key: problem.Key("mcpServers", name), Msg: "a server of that name is already configured (in the configuration or an earlier --mcp-config file)"}
		}
	}
	if c.MCPServers == nil {
		c.MCPServers = map[string]*Server{}
	}
	for _, name := range names {
		c.MCPServers[name] = servers[name]
	}
	return nil
}
