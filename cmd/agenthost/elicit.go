package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
)

// terminalElicitation asks a server's elicitation request on the terminal
// (the REPL). It reads whole lines from the terminal's shared input, one
// question at a time.
type terminalElicitation struct {
	in  *approvals.Input
	out io.Writer
	mu  sync.Mutex
}

func newTerminalElicitation(in *approvals.Input, out io.Writer) *terminalElicitation {
	return &terminalElicitation{in: in, out: out}
}

func (e *terminalElicitation) ask(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	decline := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}
	p := req.Params
	// The questions are only asked on a terminal: the server's text is
	// always escaped.
	fmt.Fprintf(e.out, "\n[%s asks] %s\n", approvals.TerminalText(server), approvals.TerminalText(strings.TrimSpace(p.Message)))
	if p.Mode == "url" {
		fmt.Fprintln(e.out, "  (URL elicitation is not supported on the terminal; declined)")
		return decline, nil
	}
	props, required := schemaFields(p.RequestedSchema)
	content := map[string]any{}
	for _, name := range props.names {
		for {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			mark := ""
			if required[name] {
				mark = "*"
			}
			fmt.Fprintf(e.out, "  %s%s (%s): ", approvals.TerminalText(name), mark, approvals.TerminalText(props.types[name]))
			line, err := e.in.ReadLine(ctx)
			if errors.Is(err, approvals.ErrLineTooLong) {
				fmt.Fprintln(e.out, "  too long")
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return decline, nil
			}
			line = strings.TrimSpace(line)
			if line == "" && !required[name] {
				break
			}
			v, ok := convert(line, props.types[name])
			if !ok {
				fmt.Fprintf(e.out, "  expected a %s\n", approvals.TerminalText(props.types[name]))
				continue
			}
			content[name] = v
			break
		}
	}
	fmt.Fprint(e.out, "  send this answer? [y] yes  [n] decline: ")
	line, _ := e.in.ReadLine(ctx)
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y") {
		return decline, nil
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: content}}, nil
}

type fields struct {
	names []string
	types map[string]string
}

// schemaFields reads the flat object schema elicitation uses.
func schemaFields(schema any) (fields, map[string]bool) {
	f := fields{types: map[string]string{}}
	required := map[string]bool{}
	raw, err := json.Marshal(schema)
	if err != nil {
		return f, required
	}
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return f, required
	}
	for name, p := range s.Properties {
		f.names = append(f.names, name)
		f.types[name] = p.Type
	}
	sort.Strings(f.names)
	for _, r := range s.Required {
		required[r] = true
	}
	return f, required
}

func convert(s, typ string) (any, bool) {
	switch typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, true
		case "n", "no", "false":
			return false, true
		}
		return nil, false
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case "number":
		n, err := strconv.ParseFloat(s, 64)
		return n, err == nil
	default:
		return s, true
	}
}
