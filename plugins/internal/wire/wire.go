// Package wire holds what both ends of the credential plugin protocol share:
// the go-plugin handshake, the go-plugin Plugin that registers and dispenses
// the gRPC service, and the host-side conversion of proto messages to the
// credential contract's types (bindings/contract, not bindings: a plugin
// links this package). Nothing here starts processes or logs.
package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/agenthost/agenthost/bindings/contract"
	pb "github.com/agenthost/agenthost/plugins/proto"
)

// PluginName is the key of the credential service in the go-plugin PluginSet.
const PluginName = "credential"

// ProtocolVersion is the credential protocol version this build speaks.
// Bump it (and keep the old one in VersionedPlugins while supported) when the
// proto changes incompatibly.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake host and plugins must agree on. The
// cookie is not a secret: it only stops a plugin binary from serving when it
// was run by something other than an agenthost host (or run by hand).
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "AGENTHOST_CREDENTIAL_PLUGIN",
	MagicCookieValue: "f47887534feab3f1badeb07cd0963dc9",
}

// GRPCPlugin is the go-plugin Plugin for the credential service. On the
// plugin side Impl must be set; on the host side it is left nil.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl pb.CredentialServer
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers the credential service.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("wire: GRPCPlugin.Impl is nil")
	}
	pb.RegisterCredentialServer(s, p.Impl)
	return nil
}

// GRPCClient returns a *Client talking to the plugin over conn.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{rpc: pb.NewCredentialClient(conn)}, nil
}

// PluginSet is the go-plugin plugin set for one side of the protocol.
func PluginSet(server pb.CredentialServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: server}}
}

// Info is what Describe reports.
type Info struct {
	Name         string
	Version      string
	ConfigSchema json.RawMessage
}

// Client is the host-side view of one connected plugin. It converts between
// proto messages and contract types and returns gRPC status errors as-is:
// the caller decides what they mean (and redacts their messages).
type Client struct {
	rpc pb.CredentialClient
}

// Describe calls the plugin's Describe.
func (c *Client) Describe(ctx context.Context) (Info, error) {
	resp, err := c.rpc.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return Info{}, err
	}
	return Info{Name: resp.GetName(), Version: resp.GetVersion(), ConfigSchema: resp.GetConfigSchemaJson()}, nil
}

// Configure sends config (nil means an empty object) to the plugin.
func (c *Client) Configure(ctx context.Context, config map[string]any) error {
	if config == nil {
		config = map[string]any{}
	}
	raw, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("encode plugin config: %w", err)
	}
	return c.ConfigureJSON(ctx, raw)
}

// ConfigureJSON sends raw JSON as the configuration, unchecked; the test kit
// uses it to send garbage on purpose.
func (c *Client) ConfigureJSON(ctx context.Context, raw []byte) error {
	_, err := c.rpc.Configure(ctx, &pb.ConfigureRequest{ConfigJson: raw})
	return err
}

// Resolve asks the plugin for one value.
func (c *Client) Resolve(ctx context.Context, req contract.Request) (contract.Resolved, error) {
	resp, err := c.rpc.Resolve(ctx, &pb.ResolveRequest{
		SessionId:       req.SessionID,
		Subject:         req.Subject,
		Server:          req.Server,
		Tool:            req.Tool,
		Param:           req.Param,
		ParamSchemaJson: req.Schema,
		Ref:             req.Ref,
	})
	if err != nil {
		return contract.Resolved{}, err
	}
	var expiry time.Time
	if ts := resp.GetExpiry(); ts != nil {
		expiry = ts.AsTime()
	}
	return contract.Resolved{
		Value:       resp.GetValue(),
		Expiry:      expiry,
		Sensitivity: SensitivityFromProto(resp.GetSensitivity()),
	}, nil
}

// SensitivityFromProto maps the wire enum to the contract's; anything unknown or
// unspecified is Secret, so a plugin that forgets to say gets the careful
// treatment.
func SensitivityFromProto(s pb.Sensitivity) contract.Sensitivity {
	switch s {
	case pb.Sensitivity_SENSITIVITY_PUBLIC:
		return contract.Public
	case pb.Sensitivity_SENSITIVITY_INTERNAL:
		return contract.Internal
	default:
		return contract.Secret
	}
}
