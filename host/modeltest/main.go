package modeltest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Exit codes of Main.
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2
	ExitFailures = 3 // the server ran, but recorded failures
)

// Main runs the fakellm binary: serve the script until ctx ends (a signal),
// then report recorded failures on stderr and return the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scriptPath := fs.String("script", "", "JSON script `file` (required)")
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`")
	addrFile := fs.String("addr-file", "", "also write the base URL to `file`")
	recordPath := fs.String("record", "", "append every request as a JSON line to `file`")
	apiKey := fs.String("api-key", "", "require this Bearer `key`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if *scriptPath == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "fakellm: usage: fakellm --script FILE [--addr ADDR] [--addr-file FILE] [--record FILE] [--api-key KEY]")
		return ExitUsage
	}
	script, err := LoadScript(*scriptPath)
	if err != nil {
		fmt.Fprintln(stderr, "fakellm:", err)
		return ExitUsage
	}

	opts := []Option{WithFailureLog(stderr), WithAPIKey(*apiKey)}
	if *recordPath != "" {
		f, err := os.OpenFile(*recordPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(stderr, "fakellm: opening the record file:", err)
			return ExitError
		}
		defer f.Close()
		opts = append(opts, WithRecordWriter(f))
	}
	srv := New(script, opts...)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "fakellm: listening:", err)
		return ExitError
	}
	url := "http://" + ln.Addr().String() + "/v1"
	// The address file is in place before the LISTENING line, so either signal
	// means both are ready.
	if *addrFile != "" {
		if err := writeFileAtomic(*addrFile, []byte(url+"\n")); err != nil {
			_ = ln.Close()
			fmt.Fprintln(stderr, "fakellm:", err)
			return ExitError
		}
	}
	if _, err := fmt.Fprintf(stdout, "LISTENING %s\n", url); err != nil {
		_ = ln.Close()
		fmt.Fprintln(stderr, "fakellm: announcing the address:", err)
		return ExitError
	}

	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-served:
		fmt.Fprintln(stderr, "fakellm: serving:", err)
		return ExitError
	}
	srv.Close() // ends hangs and delays so Shutdown does not wait on them
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := httpSrv.Shutdown(shutdownCtx); err != nil {
		fmt.Fprintln(stderr, "fakellm: shutting down:", err)
	}
	<-served

	if failures := srv.Failures(); len(failures) > 0 {
		fmt.Fprintf(stderr, "fakellm: %d failure(s)\n", len(failures))
		return ExitFailures
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
	_, err = tmp.Write(data)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing address file: %w", err)
	}
	return nil
}
