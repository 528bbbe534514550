package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// The --each-tool mode does what an operator does with a server they have
// not seen: list its tools with `agenthost tools --json`, then call every
// active one with `agenthost call`. A tool's arguments are, in order of
// preference: the scenario's own (the toolCalls of MCP_CONFORMANCE_CONTEXT),
// those given with --args TOOL=JSON, a listed tool's inputSchema passed
// back as {"schema": ...} (--schema-to TOOL=LISTED), else {}.

// operation is a parsed --each-tool command line.
type operation struct {
	args     map[string]json.RawMessage
	schemaTo map[string]string // tool -> the listed tool whose inputSchema it gets
}

// parseOperation reads the options after --each-tool.
func parseOperation(words []string) (*operation, error) {
	op := &operation{args: map[string]json.RawMessage{}, schemaTo: map[string]string{}}
	for i := 0; i < len(words); i++ {
		flag := words[i]
		if flag != "--args" && flag != "--schema-to" {
			return nil, fmt.Errorf("--each-tool: unknown option %q", flag)
		}
		if i+1 == len(words) {
			return nil, fmt.Errorf("--each-tool: %s needs TOOL=VALUE", flag)
		}
		i++
		tool, value, ok := strings.Cut(words[i], "=")
		if !ok || tool == "" || value == "" {
			return nil, fmt.Errorf("--each-tool: %s %q is not TOOL=VALUE", flag, words[i])
		}
		if flag == "--schema-to" {
			op.schemaTo[tool] = value
			continue
		}
		if !json.Valid([]byte(value)) {
			return nil, fmt.Errorf("--each-tool: --args %s: not JSON", tool)
		}
		op.args[tool] = json.RawMessage(value)
	}
	return op, nil
}

// listedTool is a tool of `agenthost tools --json` (docs/cli.md).
type listedTool struct {
	Name        string          `json:"name"`
	Status      string          `json:"status"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// parseListing reads the tools of `agenthost tools --json` output.
func parseListing(out []byte) ([]listedTool, error) {
	var listing struct {
		Servers []struct {
			Tools []listedTool `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(out, &listing); err != nil {
		return nil, fmt.Errorf("agenthost tools --json: %w", err)
	}
	var tools []listedTool
	for _, s := range listing.Servers {
		tools = append(tools, s.Tools...)
	}
	return tools, nil
}

// contextToolCalls are the arguments a scenario's context names per tool.
func contextToolCalls(scenarioContext string) (map[string]json.RawMessage, error) {
	calls := map[string]json.RawMessage{}
	if scenarioContext == "" {
		return calls, nil
	}
	var ctx struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(scenarioContext), &ctx); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	for _, c := range ctx.ToolCalls {
		if c.Name != "" && len(c.Arguments) > 0 {
			calls[c.Name] = c.Arguments
		}
	}
	return calls, nil
}

// plan is the calls to make, in the listing's order: tool name and
// arguments, for every active tool.
func (op *operation) plan(tools []listedTool, fromContext map[string]json.RawMessage) ([][2]string, error) {
	schemas := map[string]json.RawMessage{}
	for _, t := range tools {
		schemas[t.Name] = t.InputSchema
	}
	var calls [][2]string
	for _, t := range tools {
		if t.Status != "active" {
			continue
		}
		args := json.RawMessage(`{}`)
		switch from, echo := op.schemaTo[t.Name]; {
		case fromContext[t.Name] != nil:
			args = fromContext[t.Name]
		case op.args[t.Name] != nil:
			args = op.args[t.Name]
		case echo:
			schema := schemas[from]
			if schema == nil {
				return nil, fmt.Errorf("--schema-to %s=%s: %s is not listed", t.Name, from, from)
			}
			encoded, err := json.Marshal(map[string]json.RawMessage{"schema": schema})
			if err != nil {
				return nil, err
			}
			args = encoded
		}
		calls = append(calls, [2]string{t.Name, string(args)})
	}
	return calls, nil
}

// operate runs the --each-tool mode and returns the exit code: the first
// failing command's, after every call was made.
func operate(agenthost, url string, words []string, env []string, scenarioContext string, stdout, stderr io.Writer) (int, error) {
	op, err := parseOperation(words)
	if err != nil {
		return 0, err
	}
	fromContext, err := contextToolCalls(scenarioContext)
	if err != nil {
		return 0, err
	}
	var listing bytes.Buffer
	list := exec.Command(agenthost, "tools", "--json", "--url", url)
	list.Env, list.Stdout, list.Stderr = env, io.MultiWriter(&listing, stdout), stderr
	if code, err := exitCode(list.Run()); err != nil || code != 0 {
		return code, err
	}
	tools, err := parseListing(listing.Bytes())
	if err != nil {
		return 0, err
	}
	calls, err := op.plan(tools, fromContext)
	if err != nil {
		return 0, err
	}
	status := 0
	for _, c := range calls {
		call := exec.Command(agenthost, "call", "--json", "--approve", "auto", c[0], "--args", c[1], "--url", url)
		call.Env, call.Stdout, call.Stderr = env, stdout, stderr
		code, err := exitCode(call.Run())
		if err != nil {
			return 0, err
		}
		if status == 0 {
			status = code
		}
	}
	return status, nil
}

// exitCode is a finished command's exit code; an error when it did not run.
func exitCode(err error) (int, error) {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), nil
	default:
		return 0, err
	}
}
