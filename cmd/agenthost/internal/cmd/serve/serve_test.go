package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestServeFlags(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	var got *ServeOptions
	if err := cmdtest.Parse(NewCmdServe(f, func(o *ServeOptions) error { got = o; return nil }), "--listen", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if got.Listen != "127.0.0.1:0" || got.Ctx == nil {
		t.Errorf("options %+v", got)
	}
	if err := cmdtest.Parse(NewCmdServe(f, nil), "extra"); cmdtest.Code(err) != 2 {
		t.Errorf("serve with an argument: %v", err)
	}
}

// A listen address that cannot be bound ends serve with exit 2, after the
// warning about an empty serve.identities.
func TestServeCannotListen(t *testing.T) {
	f, s := cmdtest.Factory(t, "", "")
	err := cmdtest.Parse(NewCmdServe(f, nil), "--listen", "256.0.0.1:1")
	if cmdtest.Code(err) != 2 {
		t.Fatalf("serve on a bad address: %v (exit %d), want 2", err, cmdtest.Code(err))
	}
	if !strings.Contains(s.ErrOut.String(), "serve.identities is empty: every /v1 request will be refused") {
		t.Errorf("stderr: %s", s.ErrOut.String())
	}
}

func TestSessionKey(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTHOST_SESSION_KEY", "")
	if key, err := sessionKey(""); key != nil || err != nil {
		t.Errorf("no key: %v, %v", key, err)
	}
	if _, err := sessionKey(missing); err == nil || !strings.Contains(err.Error(), "serve.replica.sessionKeyFile") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := sessionKey(bad); err == nil || !strings.Contains(err.Error(), "the session sealing key") || strings.Contains(err.Error(), "not a key") {
		t.Errorf("bad key: %v", err)
	}
	t.Setenv("AGENTHOST_SESSION_KEY", "not a key either")
	if _, err := sessionKey(missing); err == nil || !strings.Contains(err.Error(), "the session sealing key") {
		t.Errorf("the variable comes first: %v", err)
	}
}
