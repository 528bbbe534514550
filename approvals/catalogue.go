package approvals

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Catalogue infers a catalogue entry for each tool of a server, for an
// operator to review and paste into approvals.catalogue. It uses the
// heuristic (with the policy's extra verbs) whatever approvals.unclassified
// says, and ignores server declarations and existing catalogue entries: it
// is a starting point, not the effective metadata. A tool that cannot be
// inferred gets the fail-closed bucket and a note saying so. Every entry
// names its tool exactly (glob characters escaped) and carries a Note with
// the evidence.
func (p *Policy) Catalogue(server string, tools []ToolInfo) []CatalogueEntry {
	entries := make([]CatalogueEntry, 0, len(tools))
	for _, t := range tools {
		inf := p.inferrer.infer(t)
		e := inf.complete()
		entry := CatalogueEntry{Server: escapeGlob(server), Tool: escapeGlob(t.Name), Metadata: rawFrom(e)}
		if inf.OK {
			entry.Note = fmt.Sprintf("inferred (%s): %s", inf.Version, strings.Join(inf.Evidence, "; "))
		} else {
			entry.Note = fmt.Sprintf("NOT inferred (%s): fail-closed default, classify by hand", inf.Reason)
		}
		entries = append(entries, entry)
	}
	return entries
}

// rawFrom turns effective metadata into a catalogue metadata block with
// every field set (side effects only when there are any).
func rawFrom(e Effective) RawMetadata {
	str := func(s string) *string { return &s }
	m := RawMetadata{
		Category:               str(string(e.Category)),
		RiskLevel:              str(string(e.RiskLevel)),
		BlastRadius:            str(string(e.BlastRadius)),
		Reversibility:          str(string(e.Reversibility)),
		ApprovalRecommendation: str(string(e.ApprovalRecommendation)),
		MinTrustLevel:          e.MinTrustLevel,
	}
	if len(e.SideEffects) > 0 {
		m.SideEffects = append([]string(nil), e.SideEffects...)
	}
	return m
}

// WriteCatalogueYAML renders catalogue entries as a config fragment
// (approvals: catalogue: [...]) that loads as-is, with a header saying it
// was inferred and must be reviewed, and each entry's Note as a comment
// above it. server only appears in the header.
func WriteCatalogueYAML(w io.Writer, server string, entries []CatalogueEntry) error {
	header := []string{
		fmt.Sprintf("agenthost policy catalogue, inferred by %s from tool names, descriptions and input schemas", InferenceVersion),
	}
	if server != "" {
		header = append(header, "server: "+strconv.Quote(server))
	}
	header = append(header,
		"Inferred classifications are guesses: review every entry before pasting it under",
		"approvals.catalogue in your config. Catalogue entries override what servers declare.")
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: commentText(strings.Join(header, "\n")), Content: []*yaml.Node{
		{Kind: yaml.MappingNode, Content: []*yaml.Node{
			scalar("approvals"),
			{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("catalogue"), entriesNode(entries)}},
		}},
	}}
	if err := encodeYAML(w, doc); err != nil {
		return fmt.Errorf("write catalogue: %w", err)
	}
	return nil
}

func scalar(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
}

// commentText makes each line a "# " comment line with control characters
// removed, so text from a tool definition cannot end the comment early.
func commentText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "# " + oneLine(l, 0)
	}
	return strings.Join(lines, "\n")
}

func metadataNode(m RawMetadata) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	add := func(key string, v *string) {
		if v != nil {
			n.Content = append(n.Content, scalar(key), scalar(*v))
		}
	}
	add("category", m.Category)
	add("riskLevel", m.RiskLevel)
	add("blastRadius", m.BlastRadius)
	add("reversibility", m.Reversibility)
	if len(m.SideEffects) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range m.SideEffects {
			list.Content = append(list.Content, scalar(s))
		}
		n.Content = append(n.Content, scalar("sideEffects"), list)
	}
	add("approvalRecommendation", m.ApprovalRecommendation)
	if m.MinTrustLevel != nil {
		level, _ := normalizeTrust(m.MinTrustLevel)
		n.Content = append(n.Content, scalar("minTrustLevel"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(level)})
	}
	return n
}
