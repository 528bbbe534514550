//go:build linux

package plugins_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins"
)

// TestPinnedBytesRun swaps the plugin (through a symlink) after the pin
// check and before the exec, on the first start and on a restart: the
// bytes that were checked must be what runs, never the swapped-in binary.
// Once the swap happens before the check, the start fails.
func TestPinnedBytesRun(t *testing.T) {
	for _, tt := range []struct {
		name        string
		privateCopy bool
	}{
		{"sealed memfd", false},
		{"private copy", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.privateCopy {
				t.Cleanup(plugins.UsePrivateCopy())
			}
			dir := t.TempDir()
			link := filepath.Join(dir, "plugin")
			point := func(target string) {
				t.Helper()
				tmp := link + ".new"
				_ = os.Remove(tmp)
				if err := os.Symlink(target, tmp); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, link); err != nil {
					t.Fatal(err)
				}
			}
			point(bin.testPlugin)
			var swaps atomic.Int32
			h := newHarness(t, link, func(o *plugins.Options) {
				o.Checksum = checksum(t, bin.testPlugin)
				plugins.SetBeforeExec(o, func() {
					swaps.Add(1)
					point(bin.credFile) // a different, valid plugin
				})
			})
			ctx := context.Background()
			wantPinned := func(when string) {
				t.Helper()
				info, err := h.src.Describe(ctx)
				if err != nil {
					t.Fatalf("%s: Describe: %v", when, err)
				}
				if info.Name != "testplugin" {
					t.Fatalf("%s: the running plugin is %q, not the pinned testplugin", when, info.Name)
				}
				resolve(t, h.src, "echo/x")
			}
			wantPinned("first start")
			if n := swaps.Load(); n != 1 {
				t.Fatalf("hook ran %d times, want 1", n)
			}

			// Restart: the file is the pinned one again when it is checked,
			// and swapped again before the exec.
			point(bin.testPlugin)
			if _, err := h.src.Resolve(ctx, bindings.Request{Ref: "crash"}); !errors.Is(err, plugins.ErrPluginExited) {
				t.Fatalf("crash: %v", err)
			}
			wantPinned("restart")
			if n := swaps.Load(); n != 2 {
				t.Fatalf("hook ran %d times, want 2", n)
			}

			// The swapped file is what the next start checks: it refuses.
			if _, err := h.src.Resolve(ctx, bindings.Request{Ref: "crash"}); !errors.Is(err, plugins.ErrPluginExited) {
				t.Fatalf("crash: %v", err)
			}
			_, err := h.src.Resolve(ctx, bindings.Request{Ref: "echo/x"})
			if !errors.Is(err, plugins.ErrChecksum) {
				t.Fatalf("start with the swapped file: %v, want ErrChecksum", err)
			}
		})
	}
}
