package taskq

import (
	"strings"
	"testing"
)

// TestKey: a question's key names the definition and the rule, differs by
// question and never quotes the question.
func TestKey(t *testing.T) {
	a, b := Key("def1", "delete everything?"), Key("def1", "delete nothing?")
	if a == b || a != Key("def1", "delete everything?") {
		t.Errorf("keys %q %q", a, b)
	}
	if !strings.HasPrefix(a, "def1/"+Rule+"/") || strings.Contains(a, "delete") {
		t.Errorf("key %q", a)
	}
}
