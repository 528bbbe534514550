// Package config owns the agenthost configuration file: finding it, reading
// it (YAML, JSON or TOML, chosen by extension), applying AGENTHOST_*
// environment overrides, expanding ${VAR} references, filling defaults and
// validating it with messages that name the file and the key; and the
// administrator's managed policy file (see [Managed]), whose allowedServers
// it checks the configuration's servers against.
//
// # Where the configuration comes from
//
// [LoadDefault] reads the file named by --config when one is given.
// Otherwise it reads the first file that exists of ./agenthost.yaml and
// $XDG_CONFIG_HOME/agenthost/config.yaml (~/.config when XDG_CONFIG_HOME is
// unset or not absolute). When none exists it returns an empty, valid
// configuration whose File is "", so commands that need no configuration
// still work and callers can tell that no file was found.
//
// A Claude Desktop or Cursor mcpServers JSON file loads as it is.
//
// # Case
//
// Names chosen by the user keep their case exactly: server names, env var
// names, header names, binding parameter names, source names and source
// config maps. Setting names (llm, baseURL, callTimeout, ...) match
// case-insensitively. Unknown setting names are errors, so a typo is
// reported instead of silently ignored.
//
// # Environment overrides
//
// Every scalar setting (string, number, boolean or duration) can be
// overridden by an environment variable named AGENTHOST_ followed by the
// setting's key path with each part upper-cased and joined by "_"; any
// character other than A-Z, 0-9 and "_" becomes "_". Examples:
//
//	llm.model                      AGENTHOST_LLM_MODEL
//	llm.baseURL                    AGENTHOST_LLM_BASEURL
//	llm.timeout                    AGENTHOST_LLM_TIMEOUT=90s
//	session.trustLevel             AGENTHOST_SESSION_TRUSTLEVEL=2
//	audit.path                     AGENTHOST_AUDIT_PATH
//	approvals.unclassified         AGENTHOST_APPROVALS_UNCLASSIFIED=infer
//	approvals.noMatch              AGENTHOST_APPROVALS_NOMATCH
//	approvals.store                AGENTHOST_APPROVALS_STORE=sqlite:./agenthost.db
//	mcpServers.my-server.url       AGENTHOST_MCPSERVERS_MY_SERVER_URL
//	sources.vault.sha256           AGENTHOST_SOURCES_VAULT_SHA256
//
// Server and source settings can be overridden only for entries that exist
// in the file. Lists and maps (args, env, headers, bindings, approval rules)
// come from the file only. An empty variable counts as unset. Override
// values are taken literally: ${VAR} in them is not expanded. [Load] and
// [LoadDefault] apply overrides; [Parse] does not, so a program embedding
// agenthost gets exactly the bytes it passed in.
//
// # ${VAR} expansion
//
// ${VAR} and ${VAR:-default} are expanded in the llm string settings, in
// approvals.store and audit.store, and in a server's command, args, env
// values, cwd, url and header values.
// The default is used when VAR is unset or empty, and may itself contain
// references. $$ stands for a literal $; a $ not followed by { or $ is kept
// as it is. A reference to an unset variable without a default is an
// error naming the variable and the key, never an empty string. Expansion
// happens on decoded values, so a variable's value is never parsed as
// YAML, JSON or TOML. Disabled servers are not expanded, so a server can
// be switched off while its variables are unset.
//
// # Errors
//
// Every problem is reported as an [*Error] naming the file and the key,
// and several problems are joined with [errors.Join] so they can be fixed
// in one go. errors.Is(err, [ErrConfig]) tells a configuration error from
// any other failure (the CLI exits with code 2 for it). Messages never
// contain configured or environment values: only key and variable names.
package config
