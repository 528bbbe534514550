package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

const testSHA = "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789"

// The same mixed-case configuration in each format.
var mixedCaseDocs = map[string]string{
	FormatYAML: `
llm:
  baseURL: http://127.0.0.1:8080/v1
  model: Test-Model
  timeout: 90s
mcpServers:
  MyServer:
    command: ./bin/Server
    args: ["--Mode", "Fast"]
    env: {API_Key: abc, lowerCase: x}
    callTimeout: 10s
  Remote.Api:
    url: https://example.test/mcp
    headers: {X-Api-Key: k, Authorization: Bearer t}
    type: streamable-http
    tools: {allow: ["get_*"], deny: ["get_Secret"]}
sources:
  VaultProd:
    plugin: ./bin/Plugin
    sha256: ` + testSHA + `
    config: {Path: ./Secrets.json, Nested: {InnerKey: 1}}
bindings:
  - server: MyServer
    tools: ["*"]
    params:
      Project_ID: {value: retail}
      Token: {source: VaultProd, ref: Orders/Token}
session: {trustLevel: 3}
approvals:
  unclassified: infer
  noMatch: deny
  timeout: 2m
  catalogue:
    - {server: MyServer, tool: "get_*", metadata: {category: read, minTrustLevel: 1}}
  extraVerbs: {read: [peek]}
audit: {path: ./audit.jsonl}
`,
	FormatJSON: `{
  "llm": {"baseURL": "http://127.0.0.1:8080/v1", "model": "Test-Model", "timeout": "90s"},
  "mcpServers": {
    "MyServer": {"command": "./bin/Server", "args": ["--Mode", "Fast"],
                 "env": {"API_Key": "abc", "lowerCase": "x"}, "callTimeout": "10s"},
    "Remote.Api": {"url": "https://example.test/mcp",
                   "headers": {"X-Api-Key": "k", "Authorization": "Bearer t"},
                   "type": "streamable-http", "tools": {"allow": ["get_*"], "deny": ["get_Secret"]}}
  },
  "sources": {"VaultProd": {"plugin": "./bin/Plugin", "sha256": "` + testSHA + `",
                            "config": {"Path": "./Secrets.json", "Nested": {"InnerKey": 1}}}},
  "bindings": [{"server": "MyServer", "tools": ["*"],
                "params": {"Project_ID": {"value": "retail"}, "Token": {"source": "VaultProd", "ref": "Orders/Token"}}}],
  "session": {"trustLevel": 3},
  "approvals": {"unclassified": "infer", "noMatch": "deny", "timeout": "2m",
                "catalogue": [{"server": "MyServer", "tool": "get_*", "metadata": {"category": "read", "minTrustLevel": 1}}],
                "extraVerbs": {"read": ["peek"]}},
  "audit": {"path": "./audit.jsonl"}
}`,
	FormatTOML: `
[llm]
baseURL = "http://127.0.0.1:8080/v1"
model = "Test-Model"
timeout = "90s"

[mcpServers.MyServer]
command = "./bin/Server"
args = ["--Mode", "Fast"]
env = { API_Key = "abc", lowerCase = "x" }
callTimeout = "10s"

[mcpServers."Remote.Api"]
url = "https://example.test/mcp"
headers = { X-Api-Key = "k", Authorization = "Bearer t" }
type = "streamable-http"
tools = { allow = ["get_*"], deny = ["get_Secret"] }

[sources.VaultProd]
plugin = "./bin/Plugin"
sha256 = "` + testSHA + `"
config = { Path = "./Secrets.json", Nested = { InnerKey = 1 } }

[[bindings]]
server = "MyServer"
tools = ["*"]
params = { Project_ID = { value = "retail" }, Token = { source = "VaultProd", ref = "Orders/Token" } }

[session]
trustLevel = 3

[approvals]
unclassified = "infer"
noMatch = "deny"
timeout = "2m"
extraVerbs = { read = ["peek"] }

[[approvals.catalogue]]
server = "MyServer"
tool = "get_*"
metadata = { category = "read", minTrustLevel = 1 }

[audit]
path = "./audit.jsonl"
`,
}

func ptr[T any](v T) *T { return &v }

// wantMixedCase is the config the mixed-case documents load as, with paths
// resolved against the file's folder as Load does.
func wantMixedCase(file string) *Config {
	c := wantMixedCaseParsed(file)
	c.resolvePaths(filepath.Dir(file))
	return c
}

func wantMixedCaseParsed(file string) *Config {
	return &Config{
		File: file,
		LLM:  LLM{BaseURL: "http://127.0.0.1:8080/v1", Model: "Test-Model", Timeout: 90 * time.Second},
		MCPServers: map[string]*Server{
			"MyServer": {
				Name: "MyServer", Type: TransportStdio, Command: "./bin/Server", Args: []string{"--Mode", "Fast"},
				Env:             map[string]string{"API_Key": "abc", "lowerCase": "x"},
				ProtocolVersion: ProtocolAuto,
				SecureParams:    SecureParams{Extensions: []string{DefaultSecureParamsExtension}},
				CallTimeout:     10 * time.Second, ConnectTimeout: DefaultConnectTimeout, Tasks: TasksOff, TaskTimeout: DefaultTaskTimeout,
			},
			"Remote.Api": {
				Name: "Remote.Api", Type: TransportHTTP, URL: "https://example.test/mcp",
				Headers:         map[string]string{"X-Api-Key": "k", "Authorization": "Bearer t"},
				ProtocolVersion: ProtocolAuto,
				SecureParams:    SecureParams{Extensions: []string{DefaultSecureParamsExtension}},
				Tools:           ToolFilter{Allow: []string{"get_*"}, Deny: []string{"get_Secret"}},
				CallTimeout:     DefaultCallTimeout, ConnectTimeout: DefaultConnectTimeout, Tasks: TasksOff, TaskTimeout: DefaultTaskTimeout,
			},
		},
		Sources: map[string]*Source{
			"VaultProd": {
				Name: "VaultProd", Plugin: "./bin/Plugin", SHA256: "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
				Config: map[string]any{"Path": "./Secrets.json", "Nested": map[string]any{"InnerKey": int64(1)}},
			},
		},
		Bindings: []Binding{{
			Server: "MyServer", Tools: []string{"*"},
			Params: map[string]ParamBinding{
				"Project_ID": {Value: "retail"},
				"Token":      {Source: "VaultProd", Ref: "Orders/Token"},
			},
		}},
		Session: SessionDefaults{TrustLevel: 3},
		Approvals: rules.Config{
			Unclassified: "infer", NoMatch: "deny", Timeout: 2 * time.Minute,
			Catalogue: []rules.CatalogueEntry{{
				Server: "MyServer", Tool: "get_*",
				Metadata: risk.RawMetadata{Category: ptr("read"), MinTrustLevel: int64(1)},
			}},
			ExtraVerbs: map[string][]string{"read": {"peek"}},
		},
		Audit:  Audit{Path: "./audit.jsonl"},
		Limits: Limits{MaxResponseBytes: DefaultMaxResponseBytes, MaxDefinitionBytes: DefaultMaxDefinitionBytes, MaxModelResultBytes: DefaultMaxModelResultBytes},
	}
}

func TestLoadEachFormatPreservesCase(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	for _, tc := range []struct{ format, file string }{
		{FormatYAML, "agenthost.yaml"},
		{FormatYAML, "agenthost.yml"},
		{FormatJSON, "agenthost.json"},
		{FormatTOML, "agenthost.toml"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := writeFile(t, dir, tc.file, mixedCaseDocs[tc.format])
			got, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(wantMixedCase(path), got); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Parse keeps paths as written (there is no file to be relative to).
func TestParseMatchesLoad(t *testing.T) {
	isolateEnv(t)
	for format, doc := range mixedCaseDocs {
		t.Run(format, func(t *testing.T) {
			got, err := Parse([]byte(doc), format, "inline."+format)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(wantMixedCaseParsed("inline."+format), got); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClaudeDesktopAndCursorFiles(t *testing.T) {
	isolateEnv(t)
	stdio := func(name, command string, args []string, env map[string]string) *Server {
		return &Server{Name: name, Type: TransportStdio, Command: command, Args: args, Env: env,
			ProtocolVersion: ProtocolAuto, SecureParams: SecureParams{Extensions: []string{DefaultSecureParamsExtension}},
			CallTimeout: DefaultCallTimeout, ConnectTimeout: DefaultConnectTimeout, Tasks: TasksOff, TaskTimeout: DefaultTaskTimeout}
	}
	remote := func(name string, typ Transport, url string, headers map[string]string) *Server {
		return &Server{Name: name, Type: typ, URL: url, Headers: headers,
			ProtocolVersion: ProtocolAuto, SecureParams: SecureParams{Extensions: []string{DefaultSecureParamsExtension}},
			CallTimeout: DefaultCallTimeout, ConnectTimeout: DefaultConnectTimeout, Tasks: TasksOff, TaskTimeout: DefaultTaskTimeout}
	}
	tests := []struct {
		name string
		file string
		want map[string]*Server
	}{
		{
			name: "claude desktop",
			file: `{
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "./Desktop"]},
    "GitHub": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "x"}}
  }
}`,
			want: map[string]*Server{
				"filesystem": stdio("filesystem", "npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "./Desktop"}, nil),
				"GitHub": stdio("GitHub", "docker", []string{"run", "-i", "--rm", "ghcr.io/github/github-mcp-server"},
					map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "x"}),
			},
		},
		{
			name: "cursor with types and a byte order mark",
			file: "\ufeff" + `{
  "mcpServers": {
    "Context7": {"url": "https://mcp.example.test/mcp", "headers": {"CONTEXT7_API_KEY": "k"}},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:9000/sse"},
    "streamable": {"type": "streamable-http", "url": "http://127.0.0.1:9001/mcp"},
    "camel": {"type": "streamableHttp", "url": "http://127.0.0.1:9002/mcp"},
    "plainHTTP": {"type": "http", "url": "http://127.0.0.1:9003/mcp"},
    "local": {"type": "stdio", "command": "node", "args": ["server.js"], "env": {"API_KEY": "x"}}
  }
}`,
			want: map[string]*Server{
				"Context7":   remote("Context7", TransportHTTP, "https://mcp.example.test/mcp", map[string]string{"CONTEXT7_API_KEY": "k"}),
				"legacy":     remote("legacy", TransportSSE, "http://127.0.0.1:9000/sse", nil),
				"streamable": remote("streamable", TransportHTTP, "http://127.0.0.1:9001/mcp", nil),
				"camel":      remote("camel", TransportHTTP, "http://127.0.0.1:9002/mcp", nil),
				"plainHTTP":  remote("plainHTTP", TransportHTTP, "http://127.0.0.1:9003/mcp", nil),
				"local":      stdio("local", "node", []string{"server.js"}, map[string]string{"API_KEY": "x"}),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "mcp.json", tc.file)
			cfg, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.want, cfg.MCPServers); diff != "" {
				t.Errorf("servers mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDurationsInEveryFormat(t *testing.T) {
	isolateEnv(t)
	docs := map[string]string{
		FormatYAML: "mcpServers:\n  s: {url: 'http://127.0.0.1:1/', callTimeout: 1m30s, connectTimeout: 500ms}\napprovals: {timeout: 10m}\n",
		FormatJSON: `{"mcpServers": {"s": {"url": "http://127.0.0.1:1/", "callTimeout": "1m30s", "connectTimeout": "500ms"}}, "approvals": {"timeout": "10m"}}`,
		FormatTOML: "[mcpServers.s]\nurl = 'http://127.0.0.1:1/'\ncallTimeout = '1m30s'\nconnectTimeout = '500ms'\n[approvals]\ntimeout = '10m'\n",
	}
	for format, doc := range docs {
		t.Run(format, func(t *testing.T) {
			cfg, err := Parse([]byte(doc), format, "cfg."+format)
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.MCPServers["s"]
			if s.CallTimeout != 90*time.Second || s.ConnectTimeout != 500*time.Millisecond || cfg.Approvals.Timeout != 10*time.Minute {
				t.Errorf("durations = %v, %v, %v", s.CallTimeout, s.ConnectTimeout, cfg.Approvals.Timeout)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	isolateEnv(t)
	cfg, err := Parse([]byte("mcpServers:\n  a: {command: run}\n  b: {url: 'http://127.0.0.1:1/'}\n  c: {url: 'http://127.0.0.1:1/', type: sse}\nsources:\n  v: {plugin: p, sha256: "+testSHA+"}\n"), "yaml", "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.Timeout != 120*time.Second || cfg.Session.TrustLevel != 1 ||
		cfg.Approvals.Unclassified != "ask" || cfg.Approvals.NoMatch != "ask" || cfg.Approvals.Timeout != 5*time.Minute {
		t.Errorf("top-level defaults: llm.timeout=%v trust=%d approvals=%+v", cfg.LLM.Timeout, cfg.Session.TrustLevel, cfg.Approvals)
	}
	for name, want := range map[string]Transport{"a": TransportStdio, "b": TransportHTTP, "c": TransportSSE} {
		s := cfg.MCPServers[name]
		if s.Name != name || s.Type != want || s.ProtocolVersion != "auto" || s.CallTimeout != 60*time.Second ||
			s.ConnectTimeout != 30*time.Second || !cmp.Equal(s.SecureParams.Extensions, []string{DefaultSecureParamsExtension}) {
			t.Errorf("server %s defaults: %+v", name, s)
		}
	}
	if src := cfg.Sources["v"]; src.Name != "v" {
		t.Errorf("source name = %q", src.Name)
	}
}

func TestEmptyDocumentsAreValid(t *testing.T) {
	for _, tc := range []struct{ format, doc string }{
		{FormatYAML, ""}, {FormatYAML, "# only a comment\n"}, {FormatJSON, "  \n"}, {FormatJSON, "{}"}, {FormatTOML, ""},
	} {
		cfg, err := Parse([]byte(tc.doc), tc.format, "cfg")
		if err != nil {
			t.Errorf("%s %q: %v", tc.format, tc.doc, err)
			continue
		}
		if cfg.Session.TrustLevel != DefaultTrustLevel || len(cfg.MCPServers) != 0 {
			t.Errorf("%s %q: not an empty config with defaults: %+v", tc.format, tc.doc, cfg)
		}
	}
}

func TestLoadDefaultSearchOrder(t *testing.T) {
	const cwdDoc = "llm: {model: from-cwd}\n"
	const xdgDoc = "llm: {model: from-xdg}\n"
	const homeDoc = "llm: {model: from-home}\n"
	const explicitDoc = `{"llm": {"model": "from-explicit"}}`
	tests := []struct {
		name      string
		cwd, xdg  bool // write ./agenthost.yaml, $XDG_CONFIG_HOME/agenthost/config.yaml
		home      bool // write ~/.config/agenthost/config.yaml
		setXDG    bool
		explicit  bool
		wantModel string
		wantFile  string // relative to the temp dir; "" for no file
	}{
		{name: "explicit wins", cwd: true, xdg: true, setXDG: true, explicit: true, wantModel: "from-explicit", wantFile: "explicit.json"},
		{name: "working directory first", cwd: true, xdg: true, setXDG: true, wantModel: "from-cwd", wantFile: "agenthost.yaml"},
		{name: "then XDG_CONFIG_HOME", xdg: true, home: true, setXDG: true, wantModel: "from-xdg", wantFile: "xdg/agenthost/config.yaml"},
		{name: "then ~/.config when XDG unset", home: true, wantModel: "from-home", wantFile: "home/.config/agenthost/config.yaml"},
		{name: "nothing found", setXDG: true, wantModel: "", wantFile: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			dir := t.TempDir()
			work := filepath.Join(dir, "work")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Chdir(work)
			t.Setenv("HOME", filepath.Join(dir, "home"))
			t.Setenv("XDG_CONFIG_HOME", "")
			if tc.setXDG {
				t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
			}
			if tc.cwd {
				writeFile(t, work, "agenthost.yaml", cwdDoc)
			}
			if tc.xdg {
				writeFile(t, dir, "xdg/agenthost/config.yaml", xdgDoc)
			}
			if tc.home {
				writeFile(t, dir, "home/.config/agenthost/config.yaml", homeDoc)
			}
			explicit := ""
			if tc.explicit {
				explicit = writeFile(t, dir, "explicit.json", explicitDoc)
			}
			cfg, err := LoadDefault(explicit)
			if err != nil {
				t.Fatalf("LoadDefault: %v", err)
			}
			if cfg.LLM.Model != tc.wantModel {
				t.Errorf("model = %q, want %q", cfg.LLM.Model, tc.wantModel)
			}
			wantFile := tc.wantFile
			if wantFile == "agenthost.yaml" {
				wantFile = DefaultFile // found relative to the working directory
			} else if wantFile != "" {
				wantFile = filepath.Join(dir, wantFile)
			}
			if cfg.File != wantFile {
				t.Errorf("File = %q, want %q", cfg.File, wantFile)
			}
		})
	}
}

func TestLoadDefaultWithoutFileStillAppliesOverrides(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AGENTHOST_LLM_MODEL", "env-model")
	cfg, err := LoadDefault("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.File != "" || cfg.LLM.Model != "env-model" || cfg.LLM.Timeout != DefaultLLMTimeout {
		t.Errorf("got File=%q model=%q timeout=%v", cfg.File, cfg.LLM.Model, cfg.LLM.Timeout)
	}
}

// TestOpenAIVariables: llm.apiKey and llm.baseURL that neither the file
// nor AGENTHOST_* set come from OPENAI_API_KEY and OPENAI_BASE_URL, with or
// without a configuration file; a set value always wins; Parse, which
// reads no environment, takes neither.
func TestOpenAIVariables(t *testing.T) {
	const key, url = "sk-canary-openai", "http://127.0.0.1:9/v1"
	for _, tc := range []struct {
		name             string
		file             string // "" for no file
		agenthostKey     string
		wantKey, wantURL string
	}{
		{"no file", "", "", key, url},
		{"file without llm", "mcpServers: {}\n", "", key, url},
		{"file sets them", "llm: {apiKey: from-file, baseURL: \"http://127.0.0.1:8/v1\"}\n", "", "from-file", "http://127.0.0.1:8/v1"},
		{"AGENTHOST_LLM_APIKEY wins", "", "from-agenthost", "from-agenthost", url},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			dir := t.TempDir()
			t.Chdir(dir)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
			t.Setenv(EnvOpenAIAPIKey, key)
			t.Setenv(EnvOpenAIBaseURL, url)
			if tc.agenthostKey != "" {
				t.Setenv("AGENTHOST_LLM_APIKEY", tc.agenthostKey)
			}
			if tc.file != "" {
				writeFile(t, dir, "agenthost.yaml", tc.file)
			}
			cfg, err := LoadDefault("")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.LLM.APIKey != tc.wantKey || cfg.LLM.BaseURL != tc.wantURL {
				t.Errorf("apiKey %q baseURL %q, want %q %q", cfg.LLM.APIKey, cfg.LLM.BaseURL, tc.wantKey, tc.wantURL)
			}
		})
	}
	t.Run("Parse reads no environment", func(t *testing.T) {
		t.Setenv(EnvOpenAIAPIKey, key)
		cfg, err := Parse([]byte("mcpServers: {}\n"), FormatYAML, "x.yaml")
		if err != nil || cfg.LLM.APIKey != "" {
			t.Errorf("Parse took OPENAI_API_KEY: %q, %v", cfg.LLM.APIKey, err)
		}
	})
}

func TestLoadErrors(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	_, err := LoadDefault(missing)
	requireLines(t, err, missing+": cannot read configuration: no such file or directory")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(err, fs.ErrNotExist) = false: %v", err)
	}

	ini := writeFile(t, dir, "agenthost.ini", "x=1")
	_, err = Load(ini)
	requireLines(t, err, ini+": unsupported file extension (use .yaml, .yml, .json or .toml)")

	_, err = Parse([]byte("{}"), "xml", "cfg.xml")
	requireLines(t, err, `cfg.xml: unsupported format "xml" (use yaml, json or toml)`)

	// A directory where the default file should be is reported, not skipped.
	work := t.TempDir()
	t.Chdir(work)
	if err := os.Mkdir(filepath.Join(work, DefaultFile), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = LoadDefault("")
	requireLines(t, err, "agenthost.yaml: is a directory, not a configuration file")
}

func TestSyntaxErrorsNameTheFile(t *testing.T) {
	// The parsers' own wording may change between versions; what matters
	// is the file name, the format and where the problem is.
	tests := []struct {
		format, doc string
		wantPrefix  string
		wantContain string
	}{
		{FormatYAML, "llm:\n  model: [unclosed\n", "cfg: cannot parse YAML: ", "line "},
		{FormatYAML, "a: 1\n---\nb: 2\n", "cfg: cannot parse YAML: the file must hold exactly one document", ""},
		{FormatYAML, "- a\n- b\n", "cfg: the top level must be a mapping, not a list", ""},
		{FormatJSON, "{\n  \"llm\": {\n    \"model\": x\n  }\n}", "cfg: cannot parse JSON: line 3: ", "invalid character"},
		{FormatJSON, `{"llm": {}`, "cfg: cannot parse JSON: unexpected end of file", ""},
		{FormatJSON, `{} {}`, "cfg: cannot parse JSON: unexpected data after the top-level object", ""},
		{FormatJSON, `"just a string"`, "cfg: the top level must be a mapping, not a string", ""},
		{FormatTOML, "[llm]\nmodel = \n", "cfg: cannot parse TOML: line 2 column ", "toml: "},
		{FormatTOML, "[llm]\nmodel = 'a'\nmodel = 'b'\n", "cfg: cannot parse TOML: ", "model"},
	}
	for _, tc := range tests {
		t.Run(tc.format+" "+tc.wantPrefix, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), tc.format, "cfg")
			lines := errorLines(t, err)
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tc.wantPrefix) || !strings.Contains(strings.TrimPrefix(lines[0], tc.wantPrefix), tc.wantContain) {
				t.Errorf("error = %q, want prefix %q containing %q", err, tc.wantPrefix, tc.wantContain)
			}
		})
	}
}

func TestSystemPromptSetting(t *testing.T) {
	t.Setenv("TONE", "brief")
	for _, tc := range []struct{ format, doc string }{
		{"yaml", "llm:\n  model: m\n  systemPrompt: \"be ${TONE}\"\n"},
		{"json", `{"llm": {"model": "m", "systemPrompt": "be ${TONE}"}}`},
		{"toml", "[llm]\nmodel = \"m\"\nsystemPrompt = \"be ${TONE}\"\n"},
	} {
		cfg, err := Parse([]byte(tc.doc), tc.format, "agenthost."+tc.format)
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if cfg.LLM.SystemPrompt != "be brief" {
			t.Errorf("%s: systemPrompt = %q", tc.format, cfg.LLM.SystemPrompt)
		}
	}
}
