package config

import "github.com/agenthost/agenthost/config/internal/document"

// Formats accepted by Parse.
const (
	FormatYAML = document.YAML
	FormatJSON = document.JSON
	FormatTOML = document.TOML
)

// MaxFileBytes bounds a configuration file (4 MiB), so that a mistaken
// path (a log, a device) is not read into memory whole.
const MaxFileBytes = document.MaxFileBytes
