package host

import (
	"slices"

	"github.com/agenthost/agenthost/approvals/risk"
)

// noteLabels adds a result's labels to the session's.
func (s *Session) noteLabels(ls []risk.ResultLabel) {
	if len(ls) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range risk.LabelNames(ls) {
		if !slices.Contains(s.labels, name) {
			s.labels = append(s.labels, name)
			slices.Sort(s.labels)
		}
	}
}

// ResultLabels are the distinct labels the session's results have had,
// sorted.
func (s *Session) ResultLabels() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.labels)
}
