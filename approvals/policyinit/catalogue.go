package policyinit

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// WriteCatalogueYAML renders catalogue entries as a config fragment
// (approvals: catalogue: [...]) that loads as-is, with a header saying it
// was inferred and must be reviewed, and each entry's Note as a comment
// above it. server only appears in the header.
func WriteCatalogueYAML(w io.Writer, server string, entries []rules.CatalogueEntry) error {
	header := []string{
		fmt.Sprintf("agenthost policy catalogue, inferred by %s from tool names, descriptions and input schemas", risk.InferenceVersion),
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
		lines[i] = "# " + norm.OneLine(l, 0)
	}
	return strings.Join(lines, "\n")
}

func metadataNode(m risk.RawMetadata) *yaml.Node {
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
		level, _ := risk.NormalizeTrust(m.MinTrustLevel)
		n.Content = append(n.Content, scalar("minTrustLevel"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(level)})
	}
	return n
}
