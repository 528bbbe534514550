package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// pinsCommand is `agenthost pins`: record, review and approve pinned tool
// definitions (docs/cli.md).
func (a *app) pinsCommand() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "Pin every tool definition not pinned yet in the lock file (agenthost.lock next to the config)",
		Long: "Records the hash of each tool's definition (name, description, inputSchema, secureInputSchema,\n" +
			"annotations) that the lock file does not know yet. Changed definitions are not re-pinned: review\n" +
			"them with `agenthost pins diff` and accept them with `agenthost pins approve`. With pins.enabled in\n" +
			"the config, a changed definition is hidden from the model and its calls refused until then.\n" +
			"Details: docs/cli.md and docs/config.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.pinsRecord(cmd, server)
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	record := &cobra.Command{
		Use:   "record",
		Short: "The same as `agenthost pins`",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.pinsRecord(cmd, server)
		},
	}
	record.Flags().StringVar(&server, "server", "", "only this server")
	cmd.AddCommand(record, a.pinsDiffCommand(), a.pinsApproveCommand())
	return cmd
}

// pinsHost loads the config, connects to the servers named (all when
// none) and reports those that could not be listed.
func (a *app) pinsHost(cmd *cobra.Command, server string) (*host.Host, []string, int, error) {
	cfg, err := a.f.ConfigWith(server, "")
	if err != nil {
		return nil, nil, 0, err
	}
	h, err := a.f.Host(cfg, &a.sess)
	if err != nil {
		return nil, nil, 0, err
	}
	names, failed := a.f.ConnectServers(cmd.Context(), h, server, " (its tools were not pinned or compared)")
	return h, names, failed, nil
}

// connectServers connects h and returns the names of its connected
// servers (only server when it is set), reporting each one that is not
// connected on stderr, followed by why it matters (note), and counting it.
func (a *app) connectServers(cmd *cobra.Command, h *host.Host, server, note string) (names []string, failed int) {
	h.Connect(cmd.Context())
	for _, snap := range h.Servers() {
		if server != "" && snap.Name != server {
			continue
		}
		if snap.Status != host.StatusConnected {
			fmt.Fprintf(a.f.IO.ErrOut, "agenthost: %s: %s %s%s\n", snap.Name, snap.Status, a.f.Redact(snap.Error), note)
			failed++
			continue
		}
		names = append(names, snap.Name)
	}
	return names, failed
}

func (a *app) pinsRecord(cmd *cobra.Command, server string) error {
	h, names, failed, err := a.pinsHost(cmd, server)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		recorded, err := h.RecordPins(names...)
		if err != nil {
			return a.pinsErr(err)
		}
		for _, c := range recorded {
			fmt.Fprintf(a.f.IO.Out, "pinned %s/%s\n", c.Server, c.Tool)
		}
		changes, err := h.PinChanges(names...)
		if err != nil {
			return a.pinsErr(err)
		}
		for _, c := range changes {
			fmt.Fprintf(a.f.IO.Out, "changed since pinned, not re-pinned: %s/%s (review: agenthost pins diff %s %s)\n", c.Server, c.Tool, c.Server, c.Tool)
		}
		fmt.Fprintf(a.f.IO.Out, "lock file: %s (%d newly pinned)\n", h.PinsFile(), len(recorded))
	}
	if failed > 0 {
		return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Printed: true}
	}
	return nil
}

func (a *app) pinsDiffCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "diff [SERVER [TOOL]]",
		Short: "Show how tool definitions differ from their pins (exit 10 when some do)",
		Args:  cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool := "", ""
			if len(args) > 0 {
				server = args[0]
			}
			if len(args) > 1 {
				tool = args[1]
			}
			h, names, failed, err := a.pinsHost(cmd, server)
			if err != nil {
				return err
			}
			shown := 0
			if len(names) > 0 {
				changes, err := h.PinChanges(names...)
				if err != nil {
					return a.pinsErr(err)
				}
				for _, c := range changes {
					if tool != "" && c.Tool != tool {
						continue
					}
					writePinChange(a.f.IO.Out, c)
					shown++
				}
			}
			if shown == 0 {
				fmt.Fprintf(a.f.IO.Out, "every listed tool matches its pin (lock file: %s)\n", h.PinsFile())
			}
			switch {
			case failed > 0:
				return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Printed: true}
			case shown > 0:
				return &cmdutil.ExitErr{Code: cmdutil.ExitWouldAsk, Printed: true}
			}
			return nil
		},
	}
}

func writePinChange(w io.Writer, c host.PinChange) {
	what := "changed since pinned"
	if c.New {
		what = "new: not pinned"
	}
	fmt.Fprintf(w, "%s/%s: %s\n%s", c.Server, c.Tool, what, c.Diff)
}

func (a *app) pinsApproveCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "approve SERVER [TOOL...] | SERVER --all",
		Short: "Accept tools' current definitions into the lock file (shows what it accepts)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tools := args[0], args[1:]
			if len(tools) == 0 && !all {
				return cmdutil.UsageErr(errors.New("name the tools to approve, or --all for every changed or new tool of the server"))
			}
			if len(tools) > 0 && all {
				return cmdutil.UsageErr(errors.New("name tools or give --all, not both"))
			}
			h, names, failed, err := a.pinsHost(cmd, server)
			if err != nil {
				return err
			}
			if failed > 0 || len(names) == 0 {
				return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Printed: true}
			}
			approved, err := h.ApprovePins(server, tools...)
			if err != nil {
				return a.pinsErr(err)
			}
			for _, c := range approved {
				writePinChange(a.f.IO.Out, c)
				fmt.Fprintf(a.f.IO.Out, "approved %s/%s\n", c.Server, c.Tool)
			}
			if len(approved) == 0 {
				fmt.Fprintln(a.f.IO.Out, "nothing to approve: the named tools match their pins")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "approve every changed or new tool of the server")
	return cmd
}

// pinsErr maps a pins failure to its exit code.
func (a *app) pinsErr(err error) error {
	switch {
	case errors.Is(err, host.ErrToolUnavailable), errors.Is(err, host.ErrServerUnavailable):
		return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Err: err}
	case errors.Is(err, host.ErrUnknownServer):
		return cmdutil.UsageErr(err)
	}
	return &cmdutil.ExitErr{Code: cmdutil.ExitError, Err: err}
}
