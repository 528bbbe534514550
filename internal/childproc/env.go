package childproc

import "slices"

// basicEnv are the host variables a child process commonly needs to run at
// all, on any system. None carries a secret. It is the one list for stdio
// servers and plugins alike.
var basicEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TEMP", "TMP",
	"LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM",
	"SYSTEMROOT", "APPDATA", "USERPROFILE", // Windows: without SYSTEMROOT even networking fails
}

// BasicEnvNames returns the names of the host variables a child inherits.
func BasicEnvNames() []string { return slices.Clone(basicEnv) }

// Env is the whole environment of a child process: the basic variables
// from getenv (unset or empty ones left out), then configured, sorted by
// key; a configured key replaces the host's value of a basic variable. The
// host's own environment (API keys, plugin secrets) never reaches a child
// otherwise.
func Env(getenv func(string) string, configured map[string]string) []string {
	env := make([]string, 0, len(basicEnv)+len(configured))
	for _, k := range basicEnv {
		if _, set := configured[k]; set {
			continue
		}
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(configured))
	for k := range configured {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+configured[k])
	}
	return env
}
