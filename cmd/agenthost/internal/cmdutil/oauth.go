package cmdutil

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/oauth"
)

// LoginTimeout bounds how long a login waits for the browser's redirect.
const LoginTimeout = 5 * time.Minute

// TokenStore is the CLI's token file (docs/cli.md, "auth").
func TokenStore() (*oauth.FileStore, error) {
	p, err := oauth.DefaultFilePath(os.Getenv)
	if err != nil {
		return nil, err
	}
	return oauth.NewFileStore(p), nil
}

// SubjectNote is ` for subject "S"`, or nothing for no subject.
func SubjectNote(subject string) string {
	if subject == "" {
		return ""
	}
	return fmt.Sprintf(" for subject %q", subject)
}

// OpenBrowser sends the person to the authorization URL: through $BROWSER
// when it is set (terminal or not: that is how scripts play the browser),
// and the URL is printed on stderr either way.
func (f *Factory) OpenBrowser() func(ctx context.Context, authURL string) error {
	open, ok := compose.BrowserOpener(os.Getenv)
	stderr := f.IO.ErrOut
	return func(ctx context.Context, authURL string) error {
		if ok {
			fmt.Fprintf(stderr, "agenthost: opening the browser ($BROWSER) to authorize; if it does not open, visit:\n  %s\n", authURL)
			return open(ctx, authURL)
		}
		fmt.Fprintf(stderr, "agenthost: open this URL in your browser to authorize agenthost:\n  %s\n", authURL)
		return nil
	}
}

// canLogIn reports whether `call`, `run` and the other commands may start
// a login: a person is at the terminal, or $BROWSER is set.
func (f *Factory) canLogIn() bool {
	if _, ok := compose.BrowserOpener(os.Getenv); ok {
		return true
	}
	return f.IO.StdinIsTerminal()
}

// oauthLogin is the host's Login hook: it logs the subject in through the
// browser when someone can, and otherwise reports that the server needs
// `agenthost auth login` (exit 8).
func (f *Factory) oauthLogin(ctx context.Context, server string, c *oauth.Client, req *oauth.AuthorizationRequiredError) error {
	if !f.canLogIn() {
		hinted := *req
		hinted.Hint = fmt.Sprintf("nobody can log in here (stdin is not a terminal and $BROWSER is not set): run `agenthost auth login %s` first", loginTarget(server, c.Resource()))
		return &hinted
	}
	fmt.Fprintf(f.IO.ErrOut, "agenthost: %s requires authorization%s; logging in\n", server, SubjectNote(req.Subject))
	// The login outlives the request's own deadline (a person types a
	// password); Ctrl-C still ends the process.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LoginTimeout)
	defer cancel()
	return c.Login(lctx, oauth.LoginOptions{Subject: req.Subject, Scopes: req.Scopes, Open: f.OpenBrowser()})
}

// loginTarget is what to pass to `auth login` for a server reached at
// resource.
func loginTarget(server, resource string) string {
	if server == AdHocServer {
		return "--url " + resource
	}
	return server
}

// NeedsLogin fails a command (exit 8) when a server could not connect
// because it requires an authorization nobody could give here: the login
// hook already said how to log in, in the server's error.
func NeedsLogin(h *host.Host) error {
	for _, snap := range h.Servers() {
		if snap.Status == host.StatusError && strings.Contains(snap.Error, "requires authorization") {
			return CodeErr(ExitAuthorization, fmt.Errorf("server %s: %s", snap.Name, snap.Error))
		}
	}
	return nil
}
