package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// Probes a tool's x-test "probe" runs with the call's arguments: what a
// sandbox test asks a real server process to try (docs of the sandbox e2e
// tests). Each answers what happened as text; a refusal is a tool error.
const (
	// ProbeDial opens a TCP connection to arguments.addr.
	ProbeDial = "dial"
	// ProbeSpawn has a shell start arguments.count background `sleep 60`
	// processes (they end with the server's tree).
	ProbeSpawn = "spawn"
	// ProbeAllocate allocates and touches arguments.mib MiB.
	ProbeAllocate = "allocate"
	// ProbeRead reads the file arguments.path and answers its content.
	ProbeRead = "read"
)

var probes = map[string]func(ctx context.Context, args map[string]any) (string, bool){
	ProbeDial: func(ctx context.Context, args map[string]any) (string, bool) {
		addr, _ := args["addr"].(string)
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return "dial: " + err.Error(), true
		}
		_ = c.Close()
		return "connected", false
	},
	ProbeSpawn: func(ctx context.Context, args map[string]any) (string, bool) {
		// A shell forks: a Go server whose own thread creation failed
		// would crash instead of saying how far it got. It prints the
		// count after each background sleep it started.
		n, _ := args["count"].(float64)
		script := `i=0; while [ "$i" -lt "$1" ]; do sleep 60 </dev/null >/dev/null 2>&1 & i=$((i+1)); echo "$i"; done`
		out, err := exec.CommandContext(ctx, "sh", "-c", script, "sh", strconv.Itoa(int(n))).Output()
		lines := strings.Fields(string(out))
		started := "0"
		if len(lines) > 0 {
			started = lines[len(lines)-1]
		}
		if err != nil || started != strconv.Itoa(int(n)) {
			return fmt.Sprintf("started %s of %d: %v", started, int(n), err), true
		}
		return fmt.Sprintf("started %s of %d", started, int(n)), false
	},
	ProbeRead: func(_ context.Context, args map[string]any) (string, bool) {
		path, _ := args["path"].(string)
		b, err := os.ReadFile(path)
		if err != nil {
			return "read: " + err.Error(), true
		}
		return string(b), false
	},
	ProbeAllocate: func(_ context.Context, args map[string]any) (string, bool) {
		n, _ := args["mib"].(float64)
		b := make([]byte, int(n)<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return fmt.Sprintf("allocated %d MiB", len(b)>>20), false
	},
}

func (b *Behaviour) validateProbe() error {
	if _, ok := probes[b.Probe]; b.Probe != "" && !ok {
		return fmt.Errorf("unknown probe %q (dial, spawn, allocate or read)", b.Probe)
	}
	return nil
}

// probeReply runs the tool's probe.
func probeReply(ctx context.Context, b Behaviour, raw map[string]json.RawMessage, before []wire.Notification) reply {
	args := map[string]any{}
	for k, v := range raw {
		var x any
		if json.Unmarshal(v, &x) == nil {
			args[k] = x
		}
	}
	text, isError := probes[b.Probe](ctx, args)
	result := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
	if isError {
		result["isError"] = true
	}
	return reply{result: result, before: before}
}
