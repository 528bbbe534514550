package norm

import (
	"github.com/agenthost/agenthost/internal/glob"
)

// Catalogue and rule server and tool patterns use the configuration's one
// glob dialect (package internal/glob): * matches any run of characters
// including / and ., ? one character, [abc], [a-z] and [!a-z] a class, a
// backslash escapes the next character; matching is case-sensitive.

// EscapeGlob quotes the pattern characters of a literal tool or server name,
// so that it can be used as a catalogue glob that matches only itself.
func EscapeGlob(name string) string { return glob.Escape(name) }
