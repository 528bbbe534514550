package policyinit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// InitServer is one connected server and its (not excluded) tools, the
// input of [PlanInit].
type InitServer struct {
	Name  string
	Tools []risk.ToolInfo
}

// InitPlan is what `agenthost policy init` proposes for a configuration:
// catalogue entries for the tools the configuration has no entry for, and
// the default rules when it has no rules.
type InitPlan struct {
	Entries []rules.CatalogueEntry
	// Rules are the default rules when the configuration has no rules, else nil.
	Rules []rules.Rule
	// Present counts tools skipped because the configuration already has
	// a catalogue entry for exactly that server and tool.
	Present int
}

// defaultRules are the rules `policy init` adds to a configuration that
// has none, so that reads run without asking and writes ask one person:
// low-risk read, observe and utility tools are allowed; mutate, delete and
// destroy tools ask (at least one approver; the tool's
// approvalRecommendation can require more). Anything else (a read the
// catalogue rates medium or higher) matches no rule and gets
// approvals.noMatch, ask by default.
func defaultRules() []rules.Rule {
	return []rules.Rule{
		{ID: "init-reads", When: rules.Match{Category: []string{string(risk.CategoryRead), string(risk.CategoryObserve), string(risk.CategoryUtility)}, RiskLevel: []string{string(risk.RiskLow)}}, Decide: string(rules.ActionAllow)},
		{ID: "init-writes", When: rules.Match{Category: []string{string(risk.CategoryMutate)}}, Decide: string(rules.ActionAsk), Approvers: 1},
		{ID: "init-deletes", When: rules.Match{Category: []string{string(risk.CategoryDelete), string(risk.CategoryDestroy)}}, Decide: string(rules.ActionAsk), Approvers: 1},
	}
}

// PlanInit classifies every tool of servers with in (from
// [Policy.Inferrer]), leaving out the tools cfg's catalogue already has an
// entry for (same server and tool, exactly as written), and proposes the
// default rules (low-risk reads allowed, writes and deletes asked) when cfg
// has no rules.
func PlanInit(in *risk.Inferrer, servers []InitServer, cfg rules.Config) InitPlan {
	var plan InitPlan
	present := make(map[[2]string]bool, len(cfg.Catalogue))
	for _, e := range cfg.Catalogue {
		present[[2]string{e.Server, e.Tool}] = true
	}
	for _, s := range servers {
		for _, t := range s.Tools {
			e := classify(in, s.Name, t)
			if present[[2]string{e.Server, e.Tool}] {
				plan.Present++
				continue
			}
			present[[2]string{e.Server, e.Tool}] = true // a server listing a name twice
			plan.Entries = append(plan.Entries, e)
		}
	}
	if len(cfg.Rules) == 0 {
		plan.Rules = defaultRules()
	}
	return plan
}

// classify proposes a catalogue entry for one tool from two pieces of
// evidence: the inference heuristic and what the server declared (the
// SEP-2793 fields, and readOnlyHint/destructiveHint standing in for absent
// ones as in [Policy.Effective]). Field by field the more restrictive of
// the two wins, so the entry never lowers a risk the server declared;
// sideEffects are the union. Reversibility and approvalRecommendation are
// derived from the merged category and riskLevel (after the consistency
// floors) and raised to any declared value.
//
// minTrustLevel is the declared one, else 1, and not derived from the risk
// level as inference does: with init's default rules every call
// that is not a low-risk read asks a person, and a derived level (2 for
// medium, 3 for high) would instead hide and deny those tools in a session
// of the default trust level 1, so writes would never ask. Raise it by hand
// to keep a tool from low-trust sessions.
//
// A tool the heuristic cannot infer gets the fail-closed risk values (which
// no declaration can raise, except for side effects) with minTrustLevel 1
// and approvalRecommendation single, so that it stays offered and asked
// rather than hidden, and a Note starting "could not infer:". The Note of
// every entry says what decided.
func classify(in *risk.Inferrer, server string, tool risk.ToolInfo) rules.CatalogueEntry {
	inf := in.Infer(tool)
	ann, annErr := risk.ParseAnnotations(tool.Annotations)
	m := rules.Merger{}
	decl := m.DeclaredView(ann)
	var evidence []string
	if annErr != nil {
		evidence = append(evidence, "declared annotations ignored: "+annErr.Error())
	}
	if h := hintText(ann); h != "" {
		evidence = append(evidence, "server hints "+h)
	}

	// No known verb, but the server said what the tool is (its SEP-2793
	// category and riskLevel, or readOnlyHint/destructiveHint standing in
	// for them): the suggestion starts from that declaration rather than
	// from the fail-closed values, and is marked for review. It is only a
	// suggestion: at run time an unclassified tool keeps the fail-closed
	// risk whatever its hints say ([Policy.Effective]).
	fromHints := !inf.OK && decl.Category != nil && decl.RiskLevel != nil
	if fromHints {
		inf = risk.Inference{
			Version:     inf.Version,
			OK:          true,
			Category:    norm.NormEnum(risk.CategoryOrder, risk.Category(*decl.Category)),
			RiskLevel:   norm.NormEnum(risk.RiskOrder, risk.RiskLevel(*decl.RiskLevel)),
			BlastRadius: risk.BlastItem,
			Evidence:    []string{inf.Reason},
		}
	}

	var e risk.Effective
	if !inf.OK {
		// The fail-closed risk, but not its trust level 5 and two
		// approvers: those would hide the tool at the default trust level,
		// stricter than leaving it unclassified (offered, every call
		// asked). With init's rules (destroy asks one person) it is asked
		// on every call until someone reviews the entry.
		e = risk.FailClosed()
		e.MinTrustLevel, e.ApprovalRecommendation = risk.MinTrust, risk.ApprovalSingle
		if decl.ApprovalRecommendation != nil {
			e.ApprovalRecommendation = norm.MaxEnum(risk.ApprovalOrder, e.ApprovalRecommendation, norm.NormEnum(risk.ApprovalOrder, risk.ApprovalRecommendation(*decl.ApprovalRecommendation)))
		}
		if decl.MinTrustLevel != nil {
			t, _ := risk.NormalizeTrust(decl.MinTrustLevel)
			e.MinTrustLevel = max(e.MinTrustLevel, t)
		}
		if len(decl.SideEffects) > 0 {
			e.SideEffects = risk.NormalizeSideEffects(decl.SideEffects)
		}
	} else {
		raise := func(name string, order []string, inferred string, declared *string) string {
			if declared == nil {
				return inferred
			}
			d := string(norm.NormEnum(order, *declared))
			if norm.Rank(order, d) > norm.Rank(order, inferred) {
				evidence = append(evidence, fmt.Sprintf("declared %s %s kept over inferred %s", name, d, inferred))
				return d
			}
			return inferred
		}
		e.Category = risk.Category(raise("category", enumStrings(risk.CategoryOrder), string(inf.Category), decl.Category))
		e.RiskLevel = risk.RiskLevel(raise("riskLevel", enumStrings(risk.RiskOrder), string(inf.RiskLevel), decl.RiskLevel))
		e.BlastRadius = risk.BlastRadius(raise("blastRadius", enumStrings(risk.BlastOrder), string(inf.BlastRadius), decl.BlastRadius))
		e.SideEffects = risk.NormalizeSideEffects(append(append([]string(nil), inf.SideEffects...), decl.SideEffects...))
		evidence = append(evidence, risk.ApplyFloors(&e)...)
		derived := norm.MaxEnum(risk.ReversibilityOrder, risk.ReversibilityFor(e.Category), risk.OrDefault(inf.Reversibility, risk.ReversibleAuto))
		e.Reversibility = risk.Reversibility(raise("reversibility", enumStrings(risk.ReversibilityOrder), string(derived), decl.Reversibility))
		e.ApprovalRecommendation = risk.ApprovalRecommendation(raise("approvalRecommendation", enumStrings(risk.ApprovalOrder), string(risk.ApprovalFor(e.RiskLevel)), decl.ApprovalRecommendation))
		e.MinTrustLevel = risk.MinTrust
		if decl.MinTrustLevel != nil {
			if t, _ := risk.NormalizeTrust(decl.MinTrustLevel); t > e.MinTrustLevel {
				evidence = append(evidence, fmt.Sprintf("declared minTrustLevel %d kept", t))
				e.MinTrustLevel = t
			}
		}
	}
	entry := rules.CatalogueEntry{Server: norm.EscapeGlob(server), Tool: norm.EscapeGlob(tool.Name), Metadata: risk.RawFrom(e)}
	label := norm.OneLine(server, 60) + "/" + norm.OneLine(tool.Name, 80)
	switch {
	case fromHints:
		evidence = append(inf.Evidence, evidence...)
		entry.Note = fmt.Sprintf("%s\n%s: %s", label, rules.ReviewFromHints, strings.Join(evidence, "; "))
		entry.Review = rules.ReviewFromHints
	case inf.OK:
		evidence = append(inf.Evidence, evidence...)
		entry.Note = fmt.Sprintf("%s: inferred (%s): %s", label, inf.Version, strings.Join(evidence, "; "))
	default:
		entry.Review = rules.ReviewNotInferred
		entry.Note = fmt.Sprintf("%s\ncould not infer: %s — review (fail-closed risk; every call asks)", label, inf.Reason)
		if len(evidence) > 0 {
			entry.Note += "\n(" + strings.Join(evidence, "; ") + ")"
		}
	}
	return entry
}

func enumStrings[T ~string](order []T) []string {
	out := make([]string, len(order))
	for i, v := range order {
		out[i] = string(v)
	}
	return out
}

// hintText lists the MCP boolean hints a server declared, e.g.
// "readOnlyHint=true, openWorldHint=false".
func hintText(a risk.Annotations) string {
	var parts []string
	for _, h := range []struct {
		name string
		v    *bool
	}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
		if h.v != nil {
			parts = append(parts, fmt.Sprintf("%s=%t", h.name, *h.v))
		}
	}
	return strings.Join(parts, ", ")
}

const initHeader = `agenthost policy init: risk metadata for the configured servers' tools,
inferred by %s from tool names, descriptions and input schemas, never below
what a server declared. Review every entry: catalogue entries override what
servers declare. Entries marked "could not infer" have the fail-closed risk
values (offered at any trust level, every call asked): classify them.`

// WriteInitYAML writes plan as one configuration fragment: an approvals
// block with the proposed rules (if any) and one catalogue list covering
// every server, each entry under its Note as a comment. It loads as a
// configuration as-is, and merges into one that has no approvals section.
func WriteInitYAML(w io.Writer, plan InitPlan) error {
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: commentText(fmt.Sprintf(initHeader, risk.InferenceVersion)), Content: []*yaml.Node{
		{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("approvals"), approvalsNode(plan)}},
	}}
	return encodeYAML(w, doc)
}

// WriteInitEntries writes only the catalogue entries of plan, as a YAML
// list to paste under an existing catalogue: key, every line indented by
// indent spaces.
func WriteInitEntries(w io.Writer, plan InitPlan, indent int) error {
	var buf bytes.Buffer
	if len(plan.Entries) > 0 {
		if err := encodeYAML(&buf, &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{entriesNode(plan.Entries)}}); err != nil {
			return err
		}
	}
	pad := strings.Repeat(" ", max(indent, 0))
	var out strings.Builder
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l != "" {
			out.WriteString(pad + l)
		}
	}
	if _, err := io.WriteString(w, out.String()); err != nil {
		return fmt.Errorf("write catalogue entries: %w", err)
	}
	return nil
}

func encodeYAML(w io.Writer, n *yaml.Node) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return fmt.Errorf("write yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("write yaml: %w", err)
	}
	return nil
}

func approvalsNode(plan InitPlan) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if len(plan.Rules) > 0 {
		n.Content = append(n.Content, scalar("rules"), rulesNode(plan.Rules))
	}
	n.Content = append(n.Content, scalar("catalogue"), entriesNode(plan.Entries))
	return n
}

func entriesNode(entries []rules.CatalogueEntry) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, e := range entries {
		seq.Content = append(seq.Content, entryNode(e))
	}
	if len(entries) == 0 {
		seq.Style = yaml.FlowStyle
	}
	return seq
}

func entryNode(e rules.CatalogueEntry) *yaml.Node {
	item := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		scalar("server"), scalar(e.Server),
		scalar("tool"), scalar(e.Tool),
		scalar("metadata"), metadataNode(e.Metadata),
	}}
	if e.Note != "" {
		item.HeadComment = commentText(e.Note)
	}
	return item
}

func rulesNode(rules []rules.Rule) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	list := func(vs []string) *yaml.Node {
		l := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range vs {
			l.Content = append(l.Content, scalar(v))
		}
		return l
	}
	for _, r := range rules {
		when := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		if len(r.When.Category) > 0 {
			when.Content = append(when.Content, scalar("category"), list(r.When.Category))
		}
		if len(r.When.RiskLevel) > 0 {
			when.Content = append(when.Content, scalar("riskLevel"), list(r.When.RiskLevel))
		}
		item := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			scalar("id"), scalar(r.ID),
			scalar("when"), when,
			scalar("decide"), scalar(r.Decide),
		}}
		if r.Approvers > 0 {
			item.Content = append(item.Content, scalar("approvers"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(r.Approvers)})
		}
		seq.Content = append(seq.Content, item)
	}
	return seq
}

// ErrInitEdit marks a configuration file MergeInitYAML cannot edit.
var ErrInitEdit = errors.New("cannot edit the configuration")

// MergeInitYAML adds plan to a YAML configuration document and returns the
// new document: the catalogue entries whose server and tool the file's
// approvals.catalogue does not already have are appended to it (approvals
// and catalogue are created when absent), and plan.Rules are added only
// when the file has no approvals.rules (or an empty list).
//
// When the file has no approvals key the block is appended as text, so
// everything before it stays byte-identical. Otherwise the document is
// edited as a yaml.v3 node tree and re-encoded: every key and comment is
// kept, though indentation and quoting may be normalised. When there is
// nothing to add, data is returned unchanged and changed is false, so
// running init twice adds nothing.
func MergeInitYAML(data []byte, plan InitPlan) (out []byte, added int, rulesAdded, changed bool, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err = dec.Decode(&doc)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, false, false, fmt.Errorf("%w: not valid YAML: %v", ErrInitEdit, err)
	}
	if errors.Is(err, io.EOF) || len(doc.Content) == 0 || isNullNode(doc.Content[0]) && !bytes.Contains(data, []byte("---")) {
		// Empty, or comments only: the block is the whole document.
		var buf bytes.Buffer
		buf.Write(data)
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			buf.WriteByte('\n')
		}
		if err := WriteInitYAML(&buf, plan); err != nil {
			return nil, 0, false, false, err
		}
		if _, err := parseCheck(buf.Bytes()); err != nil {
			return nil, 0, false, false, err
		}
		return buf.Bytes(), len(plan.Entries), len(plan.Rules) > 0, true, nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, 0, false, false, fmt.Errorf("%w: the file holds more than one YAML document", ErrInitEdit)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, 0, false, false, fmt.Errorf("%w: the top level is not a mapping", ErrInitEdit)
	}
	root := doc.Content[0]
	approvalsVal := mappingValue(root, "approvals")
	if approvalsVal == nil && (root.Style&yaml.FlowStyle != 0 || root.Column != 1) {
		// Text cannot be appended to a flow or indented mapping: edit
		// the tree instead.
		approvalsVal = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, scalar("approvals"), approvalsVal)
	}
	if approvalsVal == nil {
		var buf bytes.Buffer
		buf.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			buf.WriteByte('\n')
		}
		if err := encodeYAML(&buf, &yaml.Node{Kind: yaml.DocumentNode, HeadComment: commentText(fmt.Sprintf(initHeader, risk.InferenceVersion)), Content: []*yaml.Node{
			{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("approvals"), approvalsNode(plan)}},
		}}); err != nil {
			return nil, 0, false, false, err
		}
		if _, err := parseCheck(buf.Bytes()); err != nil {
			return nil, 0, false, false, err
		}
		return buf.Bytes(), len(plan.Entries), len(plan.Rules) > 0, true, nil
	}
	if isNullNode(approvalsVal) {
		*approvalsVal = yaml.Node{Kind: yaml.MappingNode, HeadComment: approvalsVal.HeadComment, LineComment: approvalsVal.LineComment, FootComment: approvalsVal.FootComment}
	}
	if approvalsVal.Kind != yaml.MappingNode {
		return nil, 0, false, false, fmt.Errorf("%w: approvals is not a mapping", ErrInitEdit)
	}
	if len(plan.Rules) > 0 {
		rules := mappingValue(approvalsVal, "rules")
		switch {
		case rules == nil:
			approvalsVal.Content = append(approvalsVal.Content, scalar("rules"), rulesNode(plan.Rules))
			rulesAdded = true
		case isNullNode(rules) || (rules.Kind == yaml.SequenceNode && len(rules.Content) == 0):
			*rules = *rulesNode(plan.Rules)
			rulesAdded = true
		}
	}
	cat := mappingValue(approvalsVal, "catalogue")
	if cat == nil {
		cat = &yaml.Node{Kind: yaml.SequenceNode}
		approvalsVal.Content = append(approvalsVal.Content, scalar("catalogue"), cat)
	} else if isNullNode(cat) {
		*cat = yaml.Node{Kind: yaml.SequenceNode}
	}
	if cat.Kind != yaml.SequenceNode {
		return nil, 0, false, false, fmt.Errorf("%w: approvals.catalogue is not a list", ErrInitEdit)
	}
	present := map[[2]string]bool{}
	for _, item := range cat.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		s, t := mappingValue(item, "server"), mappingValue(item, "tool")
		if s != nil && t != nil && s.Kind == yaml.ScalarNode && t.Kind == yaml.ScalarNode {
			present[[2]string{s.Value, t.Value}] = true
		}
	}
	for _, e := range plan.Entries {
		if present[[2]string{e.Server, e.Tool}] {
			continue
		}
		present[[2]string{e.Server, e.Tool}] = true
		cat.Content = append(cat.Content, entryNode(e))
		added++
	}
	if added == 0 && !rulesAdded {
		return data, 0, false, false, nil
	}
	if len(cat.Content) > 0 {
		cat.Style &^= yaml.FlowStyle
	}
	var buf bytes.Buffer
	if err := encodeYAML(&buf, &doc); err != nil {
		return nil, 0, false, false, err
	}
	if _, err := parseCheck(buf.Bytes()); err != nil {
		return nil, 0, false, false, err
	}
	return buf.Bytes(), added, rulesAdded, true, nil
}

// parseCheck makes sure an edited document is still one YAML document
// whose top level is a mapping with an approvals mapping.
func parseCheck(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n, extra yaml.Node
	if err := dec.Decode(&n); err != nil {
		return nil, fmt.Errorf("%w: the edited file would not be valid YAML: %v", ErrInitEdit, err)
	}
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: the edited file would not be one YAML document", ErrInitEdit)
	}
	if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the edited file's top level would not be a mapping", ErrInitEdit)
	}
	if a := mappingValue(n.Content[0], "approvals"); a == nil || a.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the edited file would have no approvals mapping", ErrInitEdit)
	}
	return &n, nil
}

// mappingValue is the value node of key in a mapping node, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == "" && n.Style == 0)
}
