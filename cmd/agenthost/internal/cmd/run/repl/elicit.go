package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
)

// terminalElicitation asks a server's elicitation request on the terminal
// (the REPL), one question at a time, each answer a line typed after its
// question was drawn.
type terminalElicitation struct {
	term terminal.Asker
	mu   sync.Mutex
}

func newTerminalElicitation(ask terminal.Asker) *terminalElicitation {
	return &terminalElicitation{term: ask}
}

func (e *terminalElicitation) ask(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	decline := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}
	p := req.Params
	// The questions are only asked on a terminal: the server's text is
	// always escaped.
	e.term.Show(fmt.Sprintf("\n[%s asks] %s\n", terminal.TerminalText(server), terminal.TerminalText(strings.TrimSpace(p.Message))))
	if p.Mode == "url" {
		e.term.Show("  (URL elicitation is not supported on the terminal; declined)\n")
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
			line, err := e.term.Ask(ctx, fmt.Sprintf("  %s%s (%s): ", terminal.TerminalText(name), mark, terminal.TerminalText(props.types[name])))
			if errors.Is(err, terminal.ErrLineTooLong) {
				e.term.Show("  too long\n")
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
				e.term.Show(fmt.Sprintf("  expected a %s\n", terminal.TerminalText(props.types[name])))
				continue
			}
			content[name] = v
			break
		}
	}
	line, _ := e.term.Ask(ctx, "  send this answer? [y] yes  [n] decline: ")
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
