package risk

import (
	"encoding/json"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

// DefinitionHash identifies a tool definition: a canonical hash over its
// name, description, input schema and annotations. Any change to one of
// them voids session grants for the tool. Hosts that keep the whole raw
// definition (secureInputSchema included) can hash it canonically instead.
func (t ToolInfo) DefinitionHash() string {
	def := struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations json.RawMessage `json:"annotations"`
	}{t.Name, t.Description, norm.JSONOrString(t.InputSchema), norm.JSONOrString(t.Annotations)}
	b, _ := json.Marshal(def) // every part is valid JSON by construction
	return norm.CanonicalHash(b)
}
