//go:build unix

// Command testplugin is a credential plugin that misbehaves on request, for
// the plugins package's process tests. Flags choose what happens before
// Serve; the ref chooses what a Resolve does (see resolve).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/plugins/internal/wire"
	"github.com/agenthost/agenthost/plugins/sdk"
)

func main() {
	mode := flag.String("mode", "normal", "normal | stdout-noise | bad-cookie | bad-version | exit-early | hang")
	marker := flag.String("marker", "", "append a line to this file at process start")
	pidfile := flag.String("pidfile", "", "write the pid to this file at process start")
	ignoreSIGPIPE := flag.Bool("ignore-sigpipe", false, "survive writes to a dead host's pipes, so only the parent-death signal can end the process")
	flag.Parse()

	if *ignoreSIGPIPE {
		signal.Ignore(syscall.SIGPIPE)
	}

	if *marker != "" {
		f, err := os.OpenFile(*marker, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	if *pidfile != "" {
		writeAtomically(*pidfile, strconv.Itoa(os.Getpid()))
	}

	impl := &testSource{}
	switch *mode {
	case "normal":
		sdk.Serve(impl)
	case "stdout-noise":
		fmt.Println("hello from a chatty plugin")
		sdk.Serve(impl)
	case "bad-cookie":
		hs := wire.Handshake
		hs.MagicCookieValue = "not-the-agenthost-cookie"
		serveWith(hs, impl)
	case "bad-version":
		hs := wire.Handshake
		hs.ProtocolVersion = wire.ProtocolVersion + 1
		serveWith(hs, impl)
	case "exit-early":
		fmt.Fprintln(os.Stderr, "fatal: cannot reach the vault at vault.invalid")
		os.Exit(1)
	case "hang":
		time.Sleep(time.Hour)
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", *mode)
		os.Exit(2)
	}
}

func serveWith(hs plugin.HandshakeConfig, impl sdk.CredentialSource) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         wire.PluginSet(sdk.GRPCServer(impl)),
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

func writeAtomically(path, content string) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err == nil {
		_ = os.Rename(tmp, path)
	}
}

type testSource struct{}

func (testSource) Describe() sdk.Info {
	return sdk.Info{Name: "testplugin", Version: "0.0.1", ConfigSchema: json.RawMessage(`{
		"type": "object",
		"properties": {"reject": {"type": "boolean"}},
		"additionalProperties": false
	}`)}
}

func (testSource) Configure(_ context.Context, config map[string]any) error {
	if reject, _ := config["reject"].(bool); reject {
		return fmt.Errorf("configured to reject its configuration")
	}
	return nil
}

var lastCanary atomic.Value

var logger = hclog.New(&hclog.LoggerOptions{Name: "testplugin", Level: hclog.Trace, Output: os.Stderr, JSONFormat: true})

// resolve behaviours, by ref:
//
//	echo/X            value X
//	tenant/X          value SUBJECT:X
//	scope             the whole scope, as JSON (public)
//	env/NAME          the plugin's own $NAME (public); unknown if unset
//	expiry/UNIX       value "v" expiring at that unix time
//	slow              blocks until the call is cancelled
//	crash             the process kills itself mid-call
//	die-later         answers, then exits 100ms later
//	canary/X          logs X (JSON log and plain stderr), returns it, and
//	                  remembers it for the next two
//	error-canary      fails with an error message containing the canary
//	panic-canary      panics with the canary in the panic value
//	spawn/FILE        starts `sleep 60`, writes its pid to FILE, answers
//	public/X          value X, sensitivity public
//	anything else     unknown ref
func (testSource) Resolve(ctx context.Context, req sdk.Request) (sdk.Result, error) {
	kind, arg, _ := strings.Cut(req.Ref, "/")
	switch kind {
	case "echo":
		return sdk.Result{Value: arg}, nil
	case "tenant":
		return sdk.Result{Value: req.Subject + ":" + arg}, nil
	case "scope":
		b, _ := json.Marshal(req)
		return sdk.Result{Value: string(b), Sensitivity: sdk.Public}, nil
	case "env":
		v, ok := os.LookupEnv(arg)
		if !ok {
			return sdk.Result{}, fmt.Errorf("%w: $%s is not set", sdk.ErrUnknownRef, arg)
		}
		return sdk.Result{Value: v, Sensitivity: sdk.Public}, nil
	case "expiry":
		sec, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return sdk.Result{}, err
		}
		return sdk.Result{Value: "v", Expiry: time.Unix(sec, 0)}, nil
	case "slow":
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	case "crash":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case "die-later":
		go func() {
			time.Sleep(100 * time.Millisecond)
			os.Exit(4)
		}()
		return sdk.Result{Value: "bye"}, nil
	case "canary":
		lastCanary.Store(arg)
		logger.Info("resolving", "value", arg)
		fmt.Fprintf(os.Stderr, "[WARN] about to return %s\n", arg)
		return sdk.Result{Value: arg}, nil
	case "error-canary":
		return sdk.Result{}, fmt.Errorf("backend said no to %s", lastCanary.Load())
	case "panic-canary":
		panic("panicking while holding " + lastCanary.Load().(string))
	case "spawn":
		cmd := exec.Command("sleep", "60")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if err := cmd.Start(); err != nil {
			return sdk.Result{}, err
		}
		writeAtomically(arg, strconv.Itoa(cmd.Process.Pid))
		go func() { _ = cmd.Wait() }()
		return sdk.Result{Value: "spawned"}, nil
	case "public":
		return sdk.Result{Value: arg, Sensitivity: sdk.Public}, nil
	}
	return sdk.Result{}, fmt.Errorf("%w %q", sdk.ErrUnknownRef, req.Ref)
}
