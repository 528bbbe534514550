package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config/internal/document"
)

// fuzzCanary marks a value; no error may show it. fuzzSecret is the value
// of the environment variable fuzzSecretVar, which values may reference.
const (
	fuzzCanary    = "zq9canary"
	fuzzSecret    = "zq9secret"
	fuzzSecretVar = "AGENTHOST_FUZZ_SECRET"
)

// Documents whose @V@ places are string values, one set per format.
var fuzzTemplates = map[string][]string{
	FormatYAML: {
		"llm: {apiKey: @V@, timeout: @V@, model: @V@, baseURL: @V@}\nsession: {trustLevel: @V@}\n",
		"mcpServers:\n  t: {url: @V@, type: @V@, headers: {Authorization: @V@}}\n",
		"mcpServers:\n  t: {command: @V@, args: [@V@, @V@], env: {A: @V@}, cwd: @V@}\n",
		"approvals: {unclassified: @V@, rules: [{id: @V@, decide: @V@, timeout: @V@, when: {category: [@V@], server: @V@}}]}\n",
		"bindings: [{server: @V@, tool: @V@, params: {p: {source: @V@, ref: @V@, value: @V@}}}]\n",
	},
	FormatJSON: {
		`{"mcpServers":{"t":{"url":@V@,"headers":{"Authorization":@V@}}},"llm":{"apiKey":@V@,"maxSteps":@V@}}`,
		`{"mcpServers":{"t":{"command":@V@,"args":[@V@],"env":{"A":@V@}}},"session":{"trustLevel":@V@}}`,
	},
	FormatTOML: {
		"[llm]\napiKey = @V@\ntimeout = @V@\n[mcpServers.t]\nurl = @V@\n[mcpServers.t.headers]\nAuthorization = @V@\n",
		"[mcpServers.t]\ncommand = @V@\nargs = [@V@]\n[approvals]\nunclassified = @V@\n",
	},
}

var fuzzFormats = []string{FormatYAML, FormatJSON, FormatTOML}

// FuzzParse: decoding a configuration never panics, and no error quotes a
// value. Mode 0 splices the fuzzed text, holding the canary (and, with ref,
// a reference to a set variable), as a quoted string into every value
// place of a template; mode 1 parses the fuzzed text as a whole document,
// and checks the errors only when the document decodes, no key holds the
// canary (errors name keys by design) and it references no variable (an
// unset variable's name is shown by design).
//
// Errors for enum fields (approvals' unclassified, noMatch, decide, ...)
// quote the unknown value so the operator sees the typo; those lines are
// not checked.
func FuzzParse(f *testing.F) {
	for i, format := range fuzzFormats {
		for j := range fuzzTemplates[format] {
			f.Add(uint8(i), uint8(j), false, "x")
			f.Add(uint8(i), uint8(j), false, "${UNSET_"+fuzzCanary+"}${"+fuzzSecretVar+"}")
			f.Add(uint8(i), uint8(j), false, "http://127.0.0.1:99999/"+fuzzCanary)
			f.Add(uint8(i), uint8(j), false, "line\r\nX-Injected: 1")
		}
	}
	f.Add(uint8(0), uint8(0), true, "llm: {timeout: "+fuzzCanary+"}\nsession: {trustLevel: "+fuzzCanary+"}\n")
	f.Add(uint8(0), uint8(0), true, "approvals: {unclassified: "+fuzzCanary+", rules: [{decide: "+fuzzCanary+"}]}\n")
	f.Add(uint8(1), uint8(0), true, `{"mcpServers":{"t":{"url":"`+fuzzCanary+`","type":"`+fuzzCanary+`"}}}`)
	f.Add(uint8(2), uint8(0), true, "[session]\ntrustLevel = \""+fuzzCanary+"\"\n")
	f.Add(uint8(0), uint8(0), true, "a: &x [*x]\n")
	f.Fuzz(func(t *testing.T, formatIndex, template uint8, whole bool, text string) {
		format := fuzzFormats[int(formatIndex)%len(fuzzFormats)]
		t.Setenv(fuzzSecretVar, fuzzSecret)
		if whole {
			_, err := Parse([]byte(text), format, "cfg")
			if err == nil {
				return
			}
			doc, derr := document.Parse([]byte(text), format)
			if derr != nil || keyHolds(doc, fuzzCanary) || strings.Contains(text, "${") {
				return
			}
			checkNoCanary(t, err)
			return
		}
		templates := fuzzTemplates[format]
		value := text
		for strings.Contains(value, "${") {
			value = strings.ReplaceAll(value, "${", "")
		}
		if !strings.Contains(value, fuzzCanary) {
			value = fuzzCanary + value
		}
		if template%2 == 1 {
			value = "${" + fuzzSecretVar + "}" + value
		}
		quoted, merr := json.Marshal(value)
		if merr != nil {
			return
		}
		doc := strings.ReplaceAll(templates[int(template)%len(templates)], "@V@", string(quoted))
		_, err := Parse([]byte(doc), format, "cfg")
		checkNoCanary(t, err)
	})
}

// keyHolds reports whether any mapping key in v contains s.
func keyHolds(v any, s string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, s) || keyHolds(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if keyHolds(e, s) {
				return true
			}
		}
	}
	return false
}

func checkNoCanary(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	texts := []string{err.Error(), fmt.Sprintf("%+v", err)}
	for _, e := range unwrapAll(err) {
		texts = append(texts, e.Error())
	}
	for _, text := range texts {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, `: unknown value "`) {
				continue // an enum field's value, quoted by design
			}
			if strings.Contains(line, fuzzCanary) || strings.Contains(line, fuzzSecret) {
				t.Fatalf("error text shows a value:\n%s", text)
			}
		}
	}
}
