// Package browsertest starts a headless Chromium for tests that drive a
// real browser (the approvals page of agenthost serve). It is a test kit:
// production code never imports it.
//
// Chromium is Debian's `chromium` package (`make sysdeps` installs it). A
// test that needs it fails, never skips, when it is missing: a browser
// test that silently does not run tests nothing.
package browsertest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Executable returns Chromium's path, failing tb when it is not installed.
func Executable(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tb.Fatal("chromium is not installed: the browser tests need Debian's chromium package (run `make sysdeps`, or apt-get install --no-install-recommends chromium)")
	return ""
}

// New starts a headless Chromium with an empty profile and returns a
// chromedp context on a fresh tab; the browser stops when tb ends.
//
// Flags: --headless --no-sandbox (tests run as root in CI, where the
// sandbox cannot start) --disable-gpu --disable-background-networking (else
// it keeps calling home, which fails loudly on a closed network)
// --no-first-run, and a --user-data-dir of its own.
func New(tb testing.TB) context.Context {
	tb.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Executable(tb)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(tb.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(tb.Logf))
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		tb.Fatalf("start chromium: %v", err)
	}
	return ctx
}
