package risk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

// The Tool Annotations working group's experimental vocabularies, read
// beside SEP-2793 (docs/config.md, "Other risk vocabularies"):
//
//   - io.modelcontextprotocol/action-metadata, on a tool's annotations or
//     its _meta: where inputs go (inputMetadata), where results come from
//     (returnMetadata), what a call can cause (outcomes) and whether it
//     needs review (requiresReview). It maps into the same effective risk
//     as SEP-2793, with source "action-metadata": for a trusted server it
//     stands in for SEP-2793 fields the server left out, for any other it
//     can only raise.
//   - io.modelcontextprotocol/trust-annotations, on a result's _meta or a
//     content block's: sensitive and untrusted, booleans whose absence is
//     no claim. They label the result (see ResultLabelsOf).
//
// The drafts keep classifier values open strings; the values mapped here
// are listed in docs/config.md, every other one is noted and maps to
// nothing (it can neither raise nor lower anything).

// Extension ids of the vocabularies.
const (
	ActionMetadataKey   = "io.modelcontextprotocol/action-metadata"
	TrustAnnotationsKey = "io.modelcontextprotocol/trust-annotations"
)

// SourceActionMetadata marks an effective field that came from the
// action-metadata vocabulary.
const SourceActionMetadata Source = "action-metadata"

// Bounds of what is kept of one tool's action-metadata, so a hostile
// server cannot bloat notes or audit records.
const (
	MaxClassifierValues = 16
	MaxClassifierLen    = 64
)

// ActionMetadata is a tool's action-metadata as declared: classifier values
// normalised (lower case, letters and digits only), each list bounded.
type ActionMetadata struct {
	Present           bool
	Destinations      []string
	InputSensitivity  []string
	Sources           []string
	ReturnSensitivity []string
	Outcomes          []string
	requiresReview    bool
	// malformed lists what was not an object where one belongs.
	malformed []string
}

// ParseActionMetadata reads the action-metadata object from a tool's
// annotations and its _meta (both places occur: the draft puts it on the
// annotations, SDKs that cannot extend them use _meta). Both are read and
// combined; neither can take anything away from the other. It never fails:
// what is not an object is noted and ignored.
func ParseActionMetadata(annotations, meta json.RawMessage) ActionMetadata {
	var am ActionMetadata
	for _, raw := range []json.RawMessage{annotations, meta} {
		obj := ObjectFields(raw)
		if obj == nil {
			continue
		}
		v, ok := obj[ActionMetadataKey]
		if !ok || isNull(v) {
			continue
		}
		am.Present = true
		fields := ObjectFields(v)
		if fields == nil {
			am.malformed = append(am.malformed, ActionMetadataKey)
			continue
		}
		am.read(fields)
	}
	am.Destinations = boundValues(am.Destinations)
	am.InputSensitivity = boundValues(am.InputSensitivity)
	am.Sources = boundValues(am.Sources)
	am.ReturnSensitivity = boundValues(am.ReturnSensitivity)
	am.Outcomes = boundValues(am.Outcomes)
	return am
}

func (am *ActionMetadata) read(fields map[string]json.RawMessage) {
	if in, ok := fields["inputMetadata"]; ok && !isNull(in) {
		if f := ObjectFields(in); f != nil {
			am.Destinations = append(am.Destinations, classifiers(f["destination"])...)
			am.InputSensitivity = append(am.InputSensitivity, classifiers(f["sensitivity"])...)
			am.Outcomes = append(am.Outcomes, classifiers(f["outcomes"])...)
			am.Outcomes = append(am.Outcomes, classifiers(f["outcome"])...)
		} else {
			am.malformed = append(am.malformed, "inputMetadata")
		}
	}
	if out, ok := fields["returnMetadata"]; ok && !isNull(out) {
		if f := ObjectFields(out); f != nil {
			am.Sources = append(am.Sources, classifiers(f["source"])...)
			am.ReturnSensitivity = append(am.ReturnSensitivity, classifiers(f["sensitivity"])...)
		} else {
			am.malformed = append(am.malformed, "returnMetadata")
		}
	}
	am.Outcomes = append(am.Outcomes, classifiers(fields["outcomes"])...)
	am.Outcomes = append(am.Outcomes, classifiers(fields["outcome"])...)
	for _, key := range []string{"requiresReview", "requires_review"} {
		if v, ok := fields[key]; ok && !isNull(v) {
			var b bool
			// Anything but false asks for review: the signal can only add.
			if json.Unmarshal(v, &b) != nil || b {
				am.requiresReview = true
			}
		}
	}
}

// ObjectFields decodes a JSON object's members; nil when raw is not one.
func ObjectFields(raw json.RawMessage) map[string]json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(t, &fields) != nil {
		return nil
	}
	return fields
}

// classifiers reads one classifier: a string, an array of them, or an
// object (a structured data class such as {"regulated": {...}}), whose
// member names count as values. Other JSON is ignored.
func classifiers(raw json.RawMessage) []string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || isNull(t) {
		return nil
	}
	switch t[0] {
	case '"':
		var s string
		if json.Unmarshal(t, &s) == nil {
			return []string{normClassifier(s)}
		}
	case '[':
		var list []json.RawMessage
		if json.Unmarshal(t, &list) == nil {
			var out []string
			for _, item := range list[:min(len(list), MaxClassifierValues)] {
				out = append(out, classifiers(item)...)
			}
			return out
		}
	case '{':
		if f := ObjectFields(t); f != nil {
			out := make([]string, 0, len(f))
			for k := range f {
				out = append(out, normClassifier(k))
			}
			return out
		}
	}
	return nil
}

// normClassifier lower-cases a value and keeps its letters and digits, so
// untrustedPublic, untrusted_public and untrusted-public compare equal.
func normClassifier(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if b.Len() >= MaxClassifierLen {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// boundValues de-duplicates and sorts values, dropping empty ones, and
// keeps at most maxClassifierValues.
func boundValues(in []string) []string {
	out := slices.DeleteFunc(slices.Clone(in), func(s string) bool { return s == "" })
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxClassifierValues {
		out = out[:MaxClassifierValues]
	}
	return out
}

// Classifier values with a meaning here (normalised, see normClassifier).
var (
	// openDestinations send inputs outside the operator's systems.
	openDestinations = wordSet("public", "external", "untrustedpublic", "openworld", "thirdparty")
	// untrustedSources produce results nobody vouches for.
	untrustedSources = wordSet("untrustedpublic", "untrusted", "external", "openworld", "thirdparty", "public")
	// notSensitive are the sensitivity values that claim nothing.
	notSensitive = wordSet("none", "normal", "public", "nonsensitive", "notsensitive", "low")
)

// implied is what a tool's action-metadata implies, in SEP-2793 terms and
// as result labels, with notes on what was not mapped.
type implied struct {
	Meta   RawMetadata
	Labels []string
	Notes  []string
}

// Implied maps the declaration:
//
//   - outcome consequential: riskLevel medium, reversibility manual;
//     irreversible or destructive: riskLevel high, reversibility none;
//     requires_review (or requiresReview true): approvalRecommendation
//     single; benign: nothing;
//   - an input destination outside (public, external, openWorld,
//     thirdParty): side effect external_notification, and
//     data_exfiltration when the inputs are declared sensitive;
//   - a return source nobody vouches for (untrustedPublic, untrusted,
//     external, openWorld, thirdParty, public): every result is labelled
//     untrusted; a sensitive return sensitivity: labelled sensitive.
//
// Nothing maps to a lower value than the SEP-2793 order's least one, and
// an unknown value maps to nothing.
func (am ActionMetadata) Implied() implied {
	var im implied
	if !am.Present {
		return im
	}
	for _, what := range am.malformed {
		im.Notes = append(im.Notes, fmt.Sprintf("action-metadata: %s is not an object: ignored", what))
	}
	risk, rev := RiskLevel(""), Reversibility("")
	raise := func(r RiskLevel, v Reversibility) {
		if risk == "" || norm.Rank(RiskOrder, r) > norm.Rank(RiskOrder, risk) {
			risk = r
		}
		if rev == "" || norm.Rank(ReversibilityOrder, v) > norm.Rank(ReversibilityOrder, rev) {
			rev = v
		}
	}
	review := am.requiresReview
	for _, o := range am.Outcomes {
		switch o {
		case "benign":
		case "consequential":
			raise(RiskMedium, ReversibleManual)
		case "irreversible", "destructive":
			raise(RiskHigh, ReversibleNone)
		case "requiresreview":
			review = true
		default:
			im.Notes = append(im.Notes, fmt.Sprintf("action-metadata outcome %q is not a value agenthost maps: ignored", o))
		}
	}
	if risk != "" {
		s, v := string(risk), string(rev)
		im.Meta.RiskLevel, im.Meta.Reversibility = &s, &v
	}
	if review {
		s := string(ApprovalSingle)
		im.Meta.ApprovalRecommendation = &s
	}
	if slices.ContainsFunc(am.Destinations, func(d string) bool { return openDestinations[d] }) {
		im.Meta.SideEffects = append(im.Meta.SideEffects, "external_notification")
		if slices.ContainsFunc(am.InputSensitivity, sensitiveValue) {
			im.Meta.SideEffects = append(im.Meta.SideEffects, "data_exfiltration")
		}
	}
	if slices.ContainsFunc(am.Sources, func(s string) bool { return untrustedSources[s] }) {
		im.Labels = append(im.Labels, LabelUntrusted)
	}
	if slices.ContainsFunc(am.ReturnSensitivity, sensitiveValue) {
		im.Labels = append(im.Labels, LabelSensitive)
	}
	return im
}

// sensitiveValue reports a sensitivity value that claims sensitivity:
// every value but the few that claim nothing (pii, credentials,
// regulated, sensitive, confidential ... all count).
func sensitiveValue(s string) bool { return s != "" && !notSensitive[s] }

// Hints are the declaration's values for approvers of an unclassified tool
// (untrusted evidence, as the SEP-2793 hints are).
func (am ActionMetadata) Hints() []string {
	if !am.Present {
		return nil
	}
	var out []string
	list := func(name string, values []string) {
		if len(values) > 0 {
			out = append(out, "action-metadata "+name+"="+norm.OneLine(strings.Join(values, ","), 60))
		}
	}
	list("outcomes", am.Outcomes)
	list("destination", am.Destinations)
	list("inputSensitivity", am.InputSensitivity)
	list("returnSource", am.Sources)
	list("returnSensitivity", am.ReturnSensitivity)
	if am.requiresReview {
		out = append(out, "action-metadata requiresReview=true")
	}
	return out
}
