package rules

import (
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// Catalogue infers a catalogue entry for each tool of a server, for an
// operator to review and paste into approvals.catalogue. It uses the
// heuristic (with the policy's extra verbs) whatever approvals.unclassified
// says, and ignores server declarations and existing catalogue entries: it
// is a starting point, not the effective metadata. A tool that cannot be
// inferred gets the fail-closed bucket and a note saying so. Every entry
// names its tool exactly (glob characters escaped) and carries a Note with
// the evidence.
func (p *Policy) Catalogue(server string, tools []risk.ToolInfo) []CatalogueEntry {
	entries := make([]CatalogueEntry, 0, len(tools))
	for _, t := range tools {
		inf := p.inferrer.Infer(t)
		e := inf.Complete()
		entry := CatalogueEntry{Server: norm.EscapeGlob(server), Tool: norm.EscapeGlob(t.Name), Metadata: risk.RawFrom(e)}
		if inf.OK {
			entry.Note = fmt.Sprintf("inferred (%s): %s", inf.Version, strings.Join(inf.Evidence, "; "))
		} else {
			entry.Note = fmt.Sprintf("NOT inferred (%s): fail-closed default, classify by hand", inf.Reason)
		}
		entries = append(entries, entry)
	}
	return entries
}
