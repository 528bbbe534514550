// Package serveredit owns editing the mcpServers of a configuration file
// in place (`agenthost mcp add` and `mcp remove`): the rest of the file is
// kept (JSON byte for byte, YAML with its comments), and the edited file
// replaces the old one only once it loads.
package serveredit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/config/internal/document"
	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/atomicfile"
	"github.com/agenthost/agenthost/internal/jsonedit"
	"github.com/agenthost/agenthost/internal/regularfile"
)

// Errors of Add and Remove, for callers that branch.
var (
	// ErrServerExists: Add was given a name the file has already.
	ErrServerExists = errors.New("a server of that name is configured already")
	// ErrNoSuchServer: Remove was given a name the file does not
	// have.
	ErrNoSuchServer = errors.New("no server of that name in the file")
	// ErrCannotEdit: the file's format or shape cannot be edited without
	// losing what a person wrote (TOML, whose comments the encoder drops; a
	// mcpServers that is not a mapping).
	ErrCannotEdit = errors.New("the configuration file cannot be edited here")
)

// Load checks an edited file before it is written: it loads data (in
// format, as the file path) as a configuration and returns its servers'
// names.
type Load func(data []byte, format, path string) (servers []string, err error)

// Add adds the server name, entry, to mcpServers of the file at path, as
// config.AddServer documents it: load is the check the edited file must
// pass before it is written. Errors: ErrServerExists, ErrCannotEdit,
// *problem.Error.
func Add(path, name string, entry any, load Load) error {
	return editServers(path, true, load, func(data []byte, format string) ([]byte, error) {
		if format == document.JSON {
			return addServerJSON(data, name, entry)
		}
		return editServersYAML(data, func(servers *yaml.Node) error {
			if mappingNodeValue(servers, name) != nil {
				return ErrServerExists
			}
			var v yaml.Node
			if err := v.Encode(entry); err != nil {
				return fmt.Errorf("encode the server: %w", err)
			}
			servers.Content = append(servers.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, &v)
			servers.Style &^= yaml.FlowStyle
			return nil
		})
	}, name)
}

// Remove removes the server name from mcpServers of the configuration
// file at path, keeping the rest as Add does.
// Errors: ErrNoSuchServer, ErrCannotEdit, *problem.Error.
func Remove(path, name string, load Load) error {
	return editServers(path, false, load, func(data []byte, format string) ([]byte, error) {
		if format == document.JSON {
			return removeServerJSON(data, name)
		}
		return editServersYAML(data, func(servers *yaml.Node) error {
			for i := 0; i+1 < len(servers.Content); i += 2 {
				if servers.Content[i].Value == name {
					servers.Content = append(servers.Content[:i], servers.Content[i+2:]...)
					return nil
				}
			}
			return ErrNoSuchServer
		})
	}, "")
}

// editServers reads path, edits it and writes it back once it loads; want
// is a server the edited file must hold ("" for none).
func editServers(path string, create bool, load Load, edit func([]byte, string) ([]byte, error), want string) error {
	format, ok := document.Format(filepath.Ext(path))
	if !ok {
		return &problem.Error{File: path, Msg: "unsupported file extension (use .yaml, .yml, .json or .toml)"}
	}
	if format == document.TOML {
		return &problem.Error{File: path, Msg: "editing a TOML configuration is not supported (its comments would be lost): add the server by hand", Err: ErrCannotEdit}
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved // replace the file a link names, not the link
	}
	perm := fs.FileMode(0o600)
	data, err := regularfile.Read(path, document.MaxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		data = nil
	case err != nil:
		return &problem.Error{File: path, Msg: "cannot read configuration: " + document.DescribeReadError(err), Err: err}
	default:
		if info, err := os.Stat(path); err == nil {
			perm = info.Mode().Perm()
		}
	}
	if format == document.JSON && len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	out, err := edit(data, format)
	if err != nil {
		return &problem.Error{File: path, Msg: err.Error(), Err: err}
	}
	servers, err := load(out, format, path)
	if err != nil {
		return fmt.Errorf("not written, the edited configuration would not load: %w", err)
	}
	if want != "" && !slices.Contains(servers, want) {
		return &problem.Error{File: path, Msg: "not written: the edited configuration does not hold the server", Err: ErrCannotEdit}
	}
	if err := atomicfile.Write(path, out, perm); err != nil {
		return &problem.Error{File: path, Msg: "cannot write configuration: " + err.Error(), Err: err}
	}
	return nil
}

// editServersYAML edits the mcpServers mapping of a YAML document (added
// when missing; the document too, when the file is empty or comments only).
func editServersYAML(data []byte, edit func(servers *yaml.Node) error) ([]byte, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("cannot parse YAML: %w", document.YAMLSyntaxError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("cannot parse YAML: the file must hold exactly one document")
	}
	if len(doc.Content) == 0 || isNullYAML(doc.Content[0]) {
		comment := doc.HeadComment
		if comment == "" {
			comment = strings.TrimRight(string(data), "\n") // comments only
		}
		doc = yaml.Node{Kind: yaml.DocumentNode, HeadComment: comment, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the top level is not a mapping", ErrCannotEdit)
	}
	servers := mappingNodeValue(root, "mcpServers")
	switch {
	case servers == nil:
		servers = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "mcpServers"}, servers)
	case isNullYAML(servers):
		*servers = yaml.Node{Kind: yaml.MappingNode, LineComment: servers.LineComment, FootComment: servers.FootComment}
	case servers.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("%w: mcpServers is not a mapping", ErrCannotEdit)
	}
	if err := edit(servers); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(yamlIndent(data))
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// yamlIndent is the indentation of the first indented line of data (2 when
// there is none), so that re-encoding keeps the file's own.
func yamlIndent(data []byte) int {
	for line := range strings.SplitSeq(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if n := len(line) - len(trimmed); n > 0 && trimmed != "" && trimmed[0] != '#' && trimmed[0] != '-' {
			return min(max(n, 2), 8)
		}
	}
	return 2
}

func mappingNodeValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func isNullYAML(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == "" && n.Style == 0)
}

// serversJSON finds the mcpServers object of a JSON document; ok is false
// when there is none (or it is null).
func serversJSON(data []byte) (top, servers jsonedit.Object, ok bool, err error) {
	top, err = jsonedit.Members(bytes.TrimPrefix(data, document.BOM))
	if err != nil {
		return top, servers, false, fmt.Errorf("%w: the top level is not a JSON object", ErrCannotEdit)
	}
	if bytes.HasPrefix(data, document.BOM) {
		top = top.Shift(len(document.BOM))
	}
	span, found := top.Members["mcpServers"]
	if !found || string(data[span[0]:span[1]]) == "null" {
		return top, servers, false, nil
	}
	servers, err = jsonedit.Members(data[span[0]:span[1]])
	if err != nil {
		return top, servers, false, fmt.Errorf("%w: mcpServers is not a JSON object", ErrCannotEdit)
	}
	return top, servers.Shift(span[0]), true, nil
}

func addServerJSON(data []byte, name string, entry any) ([]byte, error) {
	top, servers, ok, err := serversJSON(data)
	if err != nil {
		return nil, err
	}
	var ed jsonedit.Edit
	switch span, found := top.Members["mcpServers"]; {
	case ok:
		if _, dup := servers.Members[name]; dup {
			return nil, ErrServerExists
		}
		ed.AddMembers(data, servers, "    ", jsonedit.Member{Name: name, Value: entry})
	case found: // null
		ed.Replace(span, map[string]any{name: entry}, "  ")
	default:
		ed.AddMembers(data, top, "  ", jsonedit.Member{Name: "mcpServers", Value: map[string]any{name: entry}})
	}
	return ed.Apply(data)
}

func removeServerJSON(data []byte, name string) ([]byte, error) {
	_, servers, ok, err := serversJSON(data)
	if err != nil {
		return nil, err
	}
	var ed jsonedit.Edit
	if !ok || !ed.RemoveMember(data, servers, name) {
		return nil, ErrNoSuchServer
	}
	return ed.Apply(data)
}
