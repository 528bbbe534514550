package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestErrorsNeverShowValues feeds a canary through every path a value can
// take into an error and checks that no error text contains it.
func TestErrorsNeverShowValues(t *testing.T) {
	const canary = "canary-7c3a9e"
	tests := []struct {
		name    string
		env     map[string]string
		doc     string
		wantKey string // an error line must start with "cfg.yaml: " + wantKey
	}{
		{
			name:    "expanded url that is not a URL",
			env:     map[string]string{"C_URL": "not a url " + canary},
			doc:     "mcpServers:\n  t: {url: '${C_URL}'}\n",
			wantKey: "mcpServers.t.url",
		},
		{
			name:    "expanded url with a bad port",
			env:     map[string]string{"C_PORT": canary},
			doc:     "mcpServers:\n  t: {url: 'http://127.0.0.1:${C_PORT}/mcp'}\n",
			wantKey: "mcpServers.t.url",
		},
		{
			name:    "expanded llm base url",
			env:     map[string]string{"C_BASE": canary},
			doc:     "llm: {baseURL: '${C_BASE}', apiKey: '${C_BASE}'}\n",
			wantKey: "llm.baseURL",
		},
		{
			name:    "header value with a line break",
			env:     map[string]string{"C_TOKEN": canary + "\r\nX-Injected: " + canary},
			doc:     "mcpServers:\n  t: {url: 'http://127.0.0.1/', headers: {Authorization: 'Bearer ${C_TOKEN}'}}\n",
			wantKey: "mcpServers.t.headers.Authorization",
		},
		{
			name:    "set variables next to an unset one",
			env:     map[string]string{"C_TOKEN": canary},
			doc:     "mcpServers:\n  t: {command: '${C_TOKEN}', args: ['${C_TOKEN}', '${C_UNSET_VAR}']}\n",
			wantKey: "mcpServers.t.args[1]",
		},
		{
			name:    "nested default with an unset variable",
			env:     map[string]string{"C_TOKEN": canary},
			doc:     "mcpServers:\n  t: {command: x, env: {A: '${C_TOKEN}', B: '${C_UNSET_VAR:-${C_ALSO_UNSET}}'}}\n",
			wantKey: "mcpServers.t.env.B",
		},
		{
			name:    "environment overrides with other problems",
			env:     map[string]string{"AGENTHOST_LLM_APIKEY": canary, "AGENTHOST_LLM_BASEURL": canary, "AGENTHOST_SESSION_TRUSTLEVEL": canary},
			doc:     "llm: {model: m}\n",
			wantKey: "session.trustLevel",
		},
		{
			name:    "environment override of a url",
			env:     map[string]string{"AGENTHOST_MCPSERVERS_T_URL": "ftp://" + canary},
			doc:     "mcpServers:\n  t: {url: 'http://127.0.0.1/'}\n",
			wantKey: "mcpServers.t.url",
		},
		{
			name:    "literal secret in the file next to type errors",
			doc:     "llm: {apiKey: " + canary + ", timeout: " + canary + "}\nsession: {trustLevel: " + canary + "}\nbindings: [{server: s, params: {p: {value: " + canary + ", env: " + canary + "}}}]\n",
			wantKey: "llm.timeout",
		},
		{
			name:    "malformed reference around a secret",
			doc:     "llm: {apiKey: '${" + canary + "}'}\nmcpServers:\n  t: {command: 'x ${UNCLOSED " + canary + "'}\n",
			wantKey: "llm.apiKey",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			unsetEnv(t, "C_UNSET_VAR", "C_ALSO_UNSET")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path := writeFile(t, t.TempDir(), "cfg.yaml", tc.doc)
			_, err := Load(path)
			lines := errorLines(t, err)
			found := false
			for _, line := range lines {
				if strings.HasPrefix(line, path+": "+tc.wantKey+": ") {
					found = true
				}
			}
			if !found {
				t.Errorf("no error for %s in:\n%v", tc.wantKey, err)
			}
			texts := []string{err.Error(), fmt.Sprintf("%+v", err)}
			for _, e := range unwrapAll(err) {
				texts = append(texts, e.Error())
				if ce, ok := e.(*Error); ok {
					texts = append(texts, fmt.Sprintf("%#v", *ce))
				}
			}
			for _, text := range texts {
				if strings.Contains(text, canary) {
					t.Errorf("error text contains the canary value:\n%s", text)
				}
			}
		})
	}
}

// unwrapAll collects every error in err's tree, to check their fields too.
func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	all := []error{err}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			all = append(all, unwrapAll(inner)...)
		}
	default:
		all = append(all, unwrapAll(errors.Unwrap(err))...)
	}
	return all
}
