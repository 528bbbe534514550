package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	startupServers = 10
	startupDelay   = 300 * time.Millisecond
)

// startupConfigs writes two agenthost configs: one stdio server, and ten.
// Every server is the agenthost-testserver binary sleeping startupDelay before it
// serves.
func startupConfigs(tb testing.TB) map[int]string {
	server := binary(tb, "agenthost-testserver")
	return sharedFixture(tb, "startup", func() (map[int]string, error) {
		dir, err := tempDir("agenthost-bench-startup-")
		if err != nil {
			return nil, err
		}
		tools := filepath.Join(dir, "tools.json")
		if err := os.WriteFile(tools, toolsJSON(10), 0o600); err != nil {
			return nil, err
		}
		configs := map[int]string{}
		for _, n := range []int{1, startupServers} {
			var b strings.Builder
			b.WriteString("mcpServers:\n")
			for i := range n {
				fmt.Fprintf(&b, "  %s:\n    command: %q\n    args: [\"--start-delay\", %q, \"--tools\", %q]\n",
					serverName(i), server, startupDelay.String(), tools)
			}
			path := filepath.Join(dir, fmt.Sprintf("servers-%d.yaml", n))
			if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
				return nil, err
			}
			configs[n] = path
		}
		return configs, nil
	})
}

// runTools runs `agenthost tools` once and checks that every server
// connected.
func runTools(ctx context.Context, agenthost, config string, servers int) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, agenthost, "--config", config, "--log-level", "error", "tools")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Dir = filepath.Dir(config)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("agenthost tools: %w\n%s", err, stderr.Bytes())
	}
	if got := strings.Count(stdout.String(), "(connected"); got != servers {
		return fmt.Errorf("agenthost tools: %d of %d servers connected:\n%s%s", got, servers, stdout.Bytes(), stderr.Bytes())
	}
	return nil
}

// BenchmarkStartup: wall time of `agenthost tools` (process start, config
// load, every server spawned, initialized and listed, the report printed)
// with one stdio server and with ten, each server taking 300 ms to start.
// The figure is servers=10 over servers=1 (all ten servers are identical,
// so the single server is also the slowest one).
func BenchmarkStartup(b *testing.B) {
	agenthost := binary(b, "agenthost")
	configs := startupConfigs(b)
	for _, n := range []int{1, startupServers} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for b.Loop() {
				if err := runTools(ctx, agenthost, configs[n], n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
