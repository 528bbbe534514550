package bench

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestBareStdioServerStartsLikeTheHosts: the bare client's stdio server
// leads a session of its own, as the host's does (childproc.Attr), so the
// per-call benchmarks compare the same process setup.
func TestBareStdioServerStartsLikeTheHosts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// Field 6 of /proc/PID/stat is the session id (the command name, field
	// 2, is "sh": no spaces).
	cmd, err := sameAttrCommand(context.Background(), "/bin/sh", nil, []string{"-c", "cut -d' ' -f6 /proc/$$/stat"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), strconv.Itoa(cmd.Process.Pid); got != want {
		t.Fatalf("the bare server's session is %s, want its own (%s)", got, want)
	}
}
