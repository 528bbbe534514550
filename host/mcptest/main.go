package mcptest

import (
	"github.com/agenthost/agenthost/host/oauth/oauthtest"

	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Exit codes of Main.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
	ExitDied  = 3
)

// Main runs the binary: parse flags, serve stdio or HTTP until EOF, ctx end
// (a signal) or a die fault, and return the process exit code.
//
// "--browse URL" plays a person's browser for OAuth tests instead: it GETs
// URL and follows the redirects (set $BROWSER to "mcptestserver --browse").
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "--browse" {
		if err := oauthtest.Browser("e2e-user")(ctx, args[1]); err != nil {
			fmt.Fprintln(stderr, "mcptestserver --browse:", err)
			return ExitError
		}
		return ExitOK
	}
	opts, err := ParseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		fmt.Fprintln(stderr, "mcptestserver:", err)
		return ExitUsage
	}
	opts.Stderr = stderr
	srv, err := New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "mcptestserver:", err)
		return ExitError
	}
	if opts.Transport == "http" {
		err = srv.ListenAndServe(ctx, func(url string) error {
			if opts.AddrFile != "" {
				return writeFileAtomic(opts.AddrFile, []byte(url+"\n"))
			}
			_, err := fmt.Fprintf(stdout, "LISTENING %s\n", url)
			return err
		})
	} else {
		err = srv.ServeStdio(ctx, stdin, stdout)
	}
	closeErr := srv.Close()
	switch {
	case errors.Is(err, ErrServerDied):
		return ExitDied
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "mcptestserver:", err)
		return ExitError
	case closeErr != nil:
		fmt.Fprintln(stderr, "mcptestserver:", closeErr)
		return ExitError
	}
	return ExitOK
}

// writeFileAtomic renames a complete temporary file into place so a reader
// polling for the file never sees half a URL.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".addr-*")
	if err != nil {
		return fmt.Errorf("creating address file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing address file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing address file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("placing address file: %w", err)
	}
	return nil
}
