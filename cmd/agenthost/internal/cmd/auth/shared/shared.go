// Package shared is what login and logout share: SERVER or --url resolved
// to a server's settings.
package shared

import (
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/compose"
)

// Server resolves SERVER (args) or --url to a server config and its name.
func Server(f *cmdutil.Factory, args []string, serverURL string) (string, *config.Server, error) {
	switch {
	case serverURL != "" && len(args) == 0:
		cfg, err := cmdutil.AdHocConfig(serverURL, "http")
		if err != nil {
			return "", nil, cmdutil.UsageErr(err)
		}
		return serverURL, cfg.MCPServers[cmdutil.AdHocServer], nil
	case serverURL == "" && len(args) == 1:
		cfg, err := f.ConfigWith(args[0], "")
		if err != nil {
			return "", nil, err
		}
		sc := cfg.MCPServers[args[0]]
		if !compose.OAuthEnabled(sc) {
			return "", nil, cmdutil.UsageErr(fmt.Errorf("server %q does not use OAuth: it is not reached by url, has oauth.disabled, or sends a static Authorization header", args[0]))
		}
		return args[0], sc, nil
	}
	return "", nil, cmdutil.UsageErr(errors.New("name one configured SERVER or pass --url URL"))
}
