// Package sdk is the whole API a credential plugin author needs. A plugin is
// a Go main package that implements CredentialSource and hands it to Serve:
//
//	func main() { sdk.Serve(&mySource{}) }
//
// agenthost starts the binary (after checking its SHA-256 pin), calls
// Describe and Configure once per start, then Resolve for each secure value
// it needs. Run by hand as `./plugin describe`, the binary prints its name,
// version and config schema as JSON and exits.
//
// Rules for authors:
//   - Never log a resolved value and never put one in an error message. The
//     host masks values it has seen, but it cannot mask what it has not.
//   - Stdout belongs to the go-plugin handshake: print nothing to it before
//     Serve. Log to stderr (the host forwards it, masked, to its logger).
//   - Return an error wrapping ErrUnknownRef for a ref you do not know.
//   - Honour ctx: the host cancels calls that time out or are abandoned.
//   - Resolve is called concurrently.
//
// The plugintest package checks an implementation against the protocol's
// conformance cases in-process, without building a binary.
package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/agenthost/agenthost/plugins/internal/wire"
)

// CredentialSource is what a plugin implements.
type CredentialSource interface {
	// Describe reports the plugin's name, version and the JSON Schema of its
	// configuration. It must not block.
	Describe() Info
	// Configure receives the operator's configuration after it passed the
	// schema from Describe. Reject anything you do not understand.
	Configure(ctx context.Context, config map[string]any) error
	// Resolve supplies one value. It is called concurrently.
	Resolve(ctx context.Context, req Request) (Result, error)
}

// Info describes a plugin.
type Info struct {
	Name    string
	Version string
	// ConfigSchema is a JSON Schema for the configuration object. Configure
	// is only called with configurations that validate against it; use
	// "additionalProperties": false so typos are rejected.
	ConfigSchema json.RawMessage
}

// Request asks for one value.
type Request struct {
	SessionID string
	// Subject is the user or tenant the session acts for.
	Subject string
	Server  string
	Tool    string
	Param   string
	// ParamSchema is the parameter's JSON Schema from the tool's
	// secureInputSchema; may be empty.
	ParamSchema json.RawMessage
	// Ref is the operator-configured reference, e.g. "orders/token".
	Ref string
}

// Result is one resolved value.
type Result struct {
	Value string
	// Expiry is when the value stops being valid; zero means never.
	Expiry time.Time
	// Sensitivity defaults to Secret. The host masks the value when this or
	// the operator's binding says Internal or Secret: a binding's
	// `sensitivity: public` does not unmask a value returned as Secret.
	Sensitivity Sensitivity
}

// Sensitivity says how carefully the host keeps a value out of output. The
// zero value is Secret, so forgetting to set it is the safe mistake.
type Sensitivity int

// Sensitivities.
const (
	Secret Sensitivity = iota
	Internal
	Public
)

// ErrUnknownRef is returned (wrapped) by Resolve for a ref the plugin does
// not know. The host sees it as plugins.ErrUnknownRef.
var ErrUnknownRef = errors.New("unknown ref")

// ErrNotConfigured is returned for a Resolve that arrives before a
// successful Configure.
var ErrNotConfigured = errors.New("plugin not configured")

// drainTimeout bounds how long Serve waits, after the host stopped the
// plugin, for in-flight calls to observe their cancelled contexts and clean
// up (for example kill the commands they started).
const drainTimeout = 2 * time.Second

// Serve runs impl as a plugin and returns when the host stops it. It is
// meant to be the whole of main.
func Serve(impl CredentialSource) {
	if len(os.Args) > 1 && os.Args[1] == "describe" && os.Getenv(wire.Handshake.MagicCookieKey) == "" {
		if err := writeDescription(os.Stdout, impl.Describe()); err != nil {
			fmt.Fprintf(os.Stderr, "describe: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	srv := newServer(impl)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		Plugins:         wire.PluginSet(srv),
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       impl.Describe().Name,
			Level:      hclog.Debug,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
	srv.drain(drainTimeout)
}

type description struct {
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
}

func writeDescription(w io.Writer, info Info) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if len(info.ConfigSchema) > 0 && !json.Valid(info.ConfigSchema) {
		return fmt.Errorf("config schema of %q is not valid JSON", info.Name)
	}
	return enc.Encode(description(info))
}
