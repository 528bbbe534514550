package childproc

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestBubblewrapArgs(t *testing.T) {
	base := Sandbox{Bubblewrap: "/usr/bin/bwrap", Mechanism: MechanismBubblewrap,
		Read: []string{"/usr", "/proc", "/dev/null", "/srv/data"}, Write: []string{"/srv/data/out"}}
	tests := []struct {
		name    string
		network Network
		dir     string
		root    bool
		want    []string
	}{
		{"network none, cwd granted", NetworkNone, "/srv/data/out", false, []string{
			"/usr/bin/bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-net",
			"--proc", "/proc", "--dev", "/dev",
			"--ro-bind-try", "/usr", "/usr", "--ro-bind-try", "/srv/data", "/srv/data",
			"--bind-try", "/srv/data/out", "/srv/data/out",
			"--chdir", "/srv/data/out", "--", "/srv/server", "--flag", "x"}},
		{"network allow, as root, cwd not granted", NetworkAllow, "/root", true, []string{
			"/usr/bin/bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL",
			"--proc", "/proc", "--dev", "/dev",
			"--ro-bind-try", "/usr", "/usr", "--ro-bind-try", "/srv/data", "/srv/data",
			"--bind-try", "/srv/data/out", "/srv/data/out",
			"--chdir", "/", "--", "/srv/server", "--flag", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := base
			sb.Network = tt.network
			got := bubblewrapArgs(&sb, "/srv/server", []string{"server", "--flag", "x"}, tt.dir, tt.root)
			if !slices.Equal(got, tt.want) {
				t.Errorf("bubblewrapArgs =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestCheckMechanism: bubblewrap refuses what it cannot confine (TCP by
// port), naming landlock; auto is landlock where the kernel has it and
// bubblewrap where it does not (bwrap must be installed: Debian's
// bubblewrap, `make sysdeps`).
func TestCheckMechanism(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap is not installed: this test needs Debian's bubblewrap package (run `make sysdeps`)")
	}
	_, err := (&Sandbox{Mechanism: MechanismBubblewrap, Network: NetworkLoopback, Ports: []uint16{5432}}).check(6)
	if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), "sandbox.mechanism landlock") {
		t.Errorf("bubblewrap with ports: %v, want a refusal naming landlock", err)
	}
	for _, c := range []struct {
		abi  int
		want string
	}{{abiScoped, "landlock+seccomp"}, {0, "bubblewrap+seccomp"}} {
		e, err := (&Sandbox{Mechanism: MechanismAuto, Network: NetworkNone}).check(c.abi)
		if err != nil || e.Mechanism != c.want || (c.want == "landlock+seccomp") != (e.Bubblewrap == "") {
			t.Errorf("auto with Landlock ABI %d: %+v, %v; want %s", c.abi, e, err, c.want)
		}
	}
	// Without Landlock and with ports, auto has nothing to fall back on.
	_, err = (&Sandbox{Mechanism: MechanismAuto, Network: NetworkLoopback, Ports: []uint16{1}}).check(0)
	if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), "no Landlock") || !strings.Contains(err.Error(), "bubblewrap") {
		t.Errorf("auto without Landlock, with ports: %v", err)
	}
}
