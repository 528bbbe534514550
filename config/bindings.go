package config

import "github.com/agenthost/agenthost/internal/glob"

// BindsServer reports whether any binding targets the server (by name or
// by a glob of the configuration's dialect): only then is the secure-params
// extension declared to it.
func (c *Config) BindsServer(server string) bool {
	for _, b := range c.Bindings {
		if b.Server == server || glob.Match(b.Server, server) {
			return true
		}
	}
	return false
}
