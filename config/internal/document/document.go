// Package document owns reading a configuration document: the file
// (bounded, regular files only), its format (YAML, JSON or TOML) parsed to
// one generic tree with every key as written, and the strict decoding of
// that tree into typed settings (unknown keys are errors, setting names
// match case-insensitively, messages name keys and never values).
package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// The formats of a configuration document.
const (
	YAML = "yaml"
	JSON = "json"
	TOML = "toml"
)

// Format accepts a format name or a file extension ("yml", ".toml").
func Format(format string) (string, bool) {
	switch strings.ToLower(strings.TrimPrefix(format, ".")) {
	case "yaml", "yml":
		return YAML, true
	case "json":
		return JSON, true
	case "toml":
		return TOML, true
	}
	return "", false
}

// BOM is the UTF-8 byte order mark Windows editors write first.
var BOM = []byte{0xEF, 0xBB, 0xBF}

// Parse parses data into a generic tree with every map key as
// written. viper would lower-case keys and split keys containing dots, so
// the document is decoded here with the format's own parser.
func Parse(data []byte, format string) (map[string]any, error) {
	// Windows editors write a BOM into JSON files such as
	// claude_desktop_config.json; encoding/json rejects it.
	data = bytes.TrimPrefix(data, BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	var doc any
	switch format {
	case YAML:
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) { // EOF: only comments
			return nil, fmt.Errorf("cannot parse YAML: %w", YAMLSyntaxError(err))
		}
		var extra any
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, errors.New("cannot parse YAML: the file must hold exactly one document")
		}
	case JSON:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("cannot parse JSON: %s", describeJSONError(data, err))
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, errors.New("cannot parse JSON: unexpected data after the top-level object")
		}
	case TOML:
		var table map[string]any
		if err := toml.Unmarshal(data, &table); err != nil {
			var derr *toml.DecodeError
			if errors.As(err, &derr) {
				row, col := derr.Position()
				return nil, fmt.Errorf("cannot parse TOML: line %d column %d: %s", row, col, derr.Error())
			}
			return nil, fmt.Errorf("cannot parse TOML: %w", err)
		}
		doc = table
	default:
		return nil, fmt.Errorf("unsupported format %q (use yaml, json or toml)", format)
	}
	if doc == nil {
		return map[string]any{}, nil
	}
	tree, err := normalizeTree(doc)
	if err != nil {
		return nil, err
	}
	top, ok := tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the top level must be a mapping, not %s", describe(tree))
	}
	return top, nil
}

// yamlParserProblems are the problems yaml.v3's parser (not its scanner)
// reports. Their line is the parser's mark, counted from 0, where a scanner
// error's line is counted from 1; and a mark on the first line is 0, which
// yaml.v3 leaves out of the message.
var yamlParserProblems = []string{
	"did not find expected node content",
	"did not find expected key",
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected '-' indicator",
	"did not find expected ',' or '}'",
	"did not find expected ',' or ']'",
	"found undefined tag handle",
	"found incompatible YAML document",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
}

// yamlScannerProblems are the scanner's problems whose mark, on the first
// line, yaml.v3 leaves out of the message.
var yamlScannerProblems = []string{
	"block sequence entries are not allowed in this context",
	"could not find expected ':'",
	"could not find expected directive name",
	"did not find URI escaped octet",
	"did not find expected '!'",
	"did not find expected alphabetic or numeric character",
	"did not find expected comment or line break",
	"did not find expected digit or '.' character",
	"did not find expected hexdecimal number",
	"did not find expected tag URI",
	"did not find expected version number",
	"did not find expected whitespace or line break",
	"did not find expected whitespace",
	"did not find the expected '>'",
	"found a tab character that violates indentation",
	"found a tab character where an indentation space is expected",
	"found an incorrect leading UTF-8 octet",
	"found an incorrect trailing UTF-8 octet",
	"found an indentation indicator equal to 0",
	"found character that cannot start any token",
	"found extremely long version number",
	"found invalid Unicode character escape code",
	"found unexpected document indicator",
	"found unexpected end of stream",
	"found unexpected non-alphabetical character",
	"found unknown directive name",
	"found unknown escape character",
	"mapping keys are not allowed in this context",
	"mapping values are not allowed in this context",
}

// YAMLSyntaxError gives a yaml.v3 syntax error the line it is on, counted
// from 1 as an editor does: yaml.v3 names the line before it for every
// parser error ("did not find expected key" under line 3 said line 2) and
// no line for a problem on the first line. Other errors are returned as
// they are.
func YAMLSyntaxError(err error) error {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "yaml: ")
	if !ok {
		return err
	}
	line := 0
	if n, problem, found := strings.Cut(strings.TrimPrefix(rest, "line "), ": "); found && strings.HasPrefix(rest, "line ") {
		v, convErr := strconv.Atoi(n)
		if convErr != nil {
			return err
		}
		line, rest = v, problem
	}
	switch {
	case slices.Contains(yamlParserProblems, rest):
		line++
	case line == 0 && slices.Contains(yamlScannerProblems, rest):
		line = 1
	default:
		return err
	}
	return fmt.Errorf("yaml: line %d: %s", line, rest)
}

// describeJSONError adds a line number to encoding/json's offsets.
func describeJSONError(data []byte, err error) string {
	var offset int64 = -1
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		offset = syntaxErr.Offset
	case errors.As(err, &typeErr):
		offset = typeErr.Offset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of file"
	}
	if offset < 0 || offset > int64(len(data)) {
		return err.Error()
	}
	line := 1 + bytes.Count(data[:offset], []byte("\n"))
	return fmt.Sprintf("line %d: %s", line, err.Error())
}

// normalizeTree gives all three formats one shape: map[string]any, []any,
// string, bool, int64, float64, nil (plus TOML date/time values).
func normalizeTree(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			n, err := normalizeTree(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			var key string
			switch k := k.(type) {
			case string:
				key = k
			case int, int64, uint64, float64, bool:
				key = fmt.Sprint(k)
			default:
				return nil, errors.New("mapping keys must be strings")
			}
			n, err := normalizeTree(e)
			if err != nil {
				return nil, err
			}
			out[key] = n
		}
		return out, nil
	case []any:
		for i, e := range v {
			n, err := normalizeTree(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
		return v, nil
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, errors.New("number out of range")
		}
		return f, nil
	case int:
		return int64(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return float64(v), nil
		}
		return int64(v), nil
	default:
		return v, nil
	}
}

// describe names the kind of a decoded value for error messages, without
// showing the value itself.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	default:
		return "a date or time"
	}
}
