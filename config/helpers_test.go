package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isolateEnv clears AGENTHOST_* variables inherited from the machine so
// that only the test's own overrides apply (an empty variable is unset).
func isolateEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") || name == EnvOpenAIAPIKey || name == EnvOpenAIBaseURL {
			t.Setenv(name, "")
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// errorLines returns each problem of err as "file: key: msg".
func errorLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error, got nil")
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("errors.Is(err, ErrConfig) = false for %v", err)
	}
	var cfgErr *Error
	if !errors.As(err, &cfgErr) {
		t.Errorf("errors.As(err, *Error) = false for %v", err)
	}
	return strings.Split(err.Error(), "\n")
}

// requireLines checks that every wanted line is one of the error's lines.
func requireLines(t *testing.T, err error, want ...string) {
	t.Helper()
	got := errorLines(t, err)
	for _, w := range want {
		found := false
		for _, g := range got {
			if g == w {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing error line\n want: %s\n  got: %s", w, strings.Join(got, "\n       "))
		}
	}
}

// unsetEnv removes variables for the rest of the test and restores them
// afterwards (t.Setenv records the old value).
func unsetEnv(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		t.Setenv(name, "")
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}
