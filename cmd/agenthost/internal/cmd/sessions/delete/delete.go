// Package delete is `agenthost sessions delete`: a saved session and its
// turns deleted.
package delete

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host/durable"
)

// DeleteOptions are `sessions delete`'s.
type DeleteOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx context.Context
	ID  string
}

// NewCmdDelete is `agenthost sessions delete`; runF replaces deleteRun
// (tests).
func NewCmdDelete(f *cmdutil.Factory, runF func(*DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{Factory: f}
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a saved session: its conversation and its turns (an unfinished one never resumes)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.ID = cmd.Context(), args[0]
			return cmdutil.Run(opts, runF, deleteRun)
		},
	}
}

func deleteRun(opts *DeleteOptions) error {
	path, err := durable.DefaultPath(os.Getenv)
	if err != nil {
		return err
	}
	e, err := durable.Open(opts.Ctx, "sqlite:"+path, durable.Options{ExecutorID: "cli-delete"})
	if err != nil {
		return err
	}
	defer e.Close()
	if err := e.DeleteSession(opts.Ctx, opts.ID); err != nil {
		if errors.Is(err, durable.ErrUnknownSession) {
			return cmdutil.UsageErr(err)
		}
		return err
	}
	fmt.Fprintf(opts.Factory.IO.Out, "deleted %s\n", opts.ID)
	return nil
}
