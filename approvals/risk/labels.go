package risk

import (
	"cmp"
	"slices"
)

// Result labels: what a tool result is marked as, by its server (the
// trust-annotations vocabulary on the result's or a content block's _meta)
// or by its tool's declaration (action-metadata returnMetadata). The host
// tells the model, writes them into the result's audit record, and rule
// expressions read the labels of the session's earlier results
// (session.resultLabels).
const (
	LabelSensitive = "sensitive"
	LabelUntrusted = "untrusted"
)

// Label sources.
const (
	LabelFromTrustAnnotations = "trust-annotations"
	LabelFromActionMetadata   = "action-metadata"
)

// ResultLabel is one label of a result and what set it.
type ResultLabel struct {
	Label  string `json:"label"`
	Source string `json:"source"`
}

// ResultLabelsOf reads the trust-annotations object of a result's _meta
// and of its content blocks' (nil maps are fine) and adds the labels the
// tool's declaration gives every result (Effective.ResultLabels). Union
// semantics: a label set anywhere labels the result, absence or false is
// no claim, and nothing can remove a label. A member that is present but
// not a boolean counts as set (a malformed claim is read cautiously). The
// result is sorted by label, then source, one entry per pair.
func ResultLabelsOf(eff Effective, resultMeta map[string]any, blockMetas []map[string]any) []ResultLabel {
	var out []ResultLabel
	add := func(label, source string) {
		l := ResultLabel{Label: label, Source: source}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	read := func(meta map[string]any) {
		ta, ok := meta[TrustAnnotationsKey].(map[string]any)
		if !ok {
			return
		}
		for _, label := range []string{LabelSensitive, LabelUntrusted} {
			if claimed(ta[label]) {
				add(label, LabelFromTrustAnnotations)
			}
		}
	}
	read(resultMeta)
	for _, m := range blockMetas {
		read(m)
	}
	for _, l := range eff.ResultLabels {
		add(l, LabelFromActionMetadata)
	}
	slices.SortFunc(out, func(a, b ResultLabel) int {
		return cmp.Or(cmp.Compare(a.Label, b.Label), cmp.Compare(a.Source, b.Source))
	})
	return out
}

// claimed reads one trust-annotations member: true claims, false and
// absent (or null) do not, anything else claims.
func claimed(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	}
	return true
}

// LabelNames are the distinct labels of ls, sorted.
func LabelNames(ls []ResultLabel) []string {
	var out []string
	for _, l := range ls {
		if !slices.Contains(out, l.Label) {
			out = append(out, l.Label)
		}
	}
	slices.Sort(out)
	return out
}
