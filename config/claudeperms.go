package config

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/agenthost/agenthost/approvals/rules"
)

// Claude Code's permission rules (settings.json `permissions`,
// `--allowedTools`, `--disallowedTools`) name tools as mcp__SERVER__TOOL,
// mcp__SERVER (every tool of the server) or mcp__SERVER__* (the same). This
// file owns how such a list becomes approvals rules (docs/config.md).

// PermissionLists are Claude Code's allow, ask and deny lists.
type PermissionLists struct {
	Allow []string `json:"allow" yaml:"allow"`
	Ask   []string `json:"ask" yaml:"ask"`
	Deny  []string `json:"deny" yaml:"deny"`
	// DefaultMode and AdditionalDirectories are read so that a
	// settings.json loads as it is; agenthost has no use for them (the
	// mode is run's --permission-mode).
	DefaultMode           string   `json:"defaultMode" yaml:"defaultMode"`
	AdditionalDirectories []string `json:"additionalDirectories" yaml:"additionalDirectories"`
}

// SplitToolList splits one --allowedTools value as Claude Code does: names
// separated by commas or white space, except inside parentheses
// (`Bash(git log:*)`).
func SplitToolList(s string) []string {
	var out []string
	depth, start := 0, -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, s[start:end])
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || unicode.IsSpace(r)):
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(s))
	return out
}

// ParseToolPattern reads one Claude Code tool pattern. ok is false for a
// pattern that names no MCP tool (Claude Code's own tools, Bash(...),
// Read, ...): agenthost has none of those.
func ParseToolPattern(p string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(p), "mcp__")
	if !found || rest == "" {
		return "", "", false
	}
	server, tool, _ = strings.Cut(rest, "__")
	if server == "" || strings.ContainsAny(server+tool, "()") {
		return "", "", false
	}
	if tool == "" {
		tool = "*"
	}
	return server, tool, true
}

// PermissionRules turns Claude Code's lists into approvals rules, one per
// pattern, with ids "SOURCE/allow[i]" and so on. As all matching rules
// combine deny > ask > allow, the lists keep Claude Code's precedence, and
// a managed policy still wins. Patterns that name no MCP tool are returned
// in ignored.
func PermissionRules(source string, lists PermissionLists) (out []rules.Rule, ignored []string) {
	for _, l := range []struct {
		decide   string
		patterns []string
	}{{"deny", lists.Deny}, {"ask", lists.Ask}, {"allow", lists.Allow}} {
		for i, p := range l.patterns {
			server, tool, ok := ParseToolPattern(p)
			if !ok {
				ignored = append(ignored, p)
				continue
			}
			out = append(out, rules.Rule{
				ID:     fmt.Sprintf("%s/%s[%d]", source, l.decide, i),
				When:   rules.Match{Server: []string{server}, Tool: []string{tool}},
				Decide: l.decide,
			})
		}
	}
	return out, ignored
}
