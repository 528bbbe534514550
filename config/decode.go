package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"gopkg.in/yaml.v3"
)

// Formats accepted by Parse.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
	FormatTOML = "toml"
)

// normalizeFormat accepts a format name or a file extension ("yml", ".toml").
func normalizeFormat(format string) (string, bool) {
	switch strings.ToLower(strings.TrimPrefix(format, ".")) {
	case "yaml", "yml":
		return FormatYAML, true
	case "json":
		return FormatJSON, true
	case "toml":
		return FormatTOML, true
	}
	return "", false
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// decodeDocument parses data into a generic tree with every map key as
// written. viper would lower-case keys and split keys containing dots, so
// the document is decoded here with the format's own parser.
func decodeDocument(data []byte, format string) (map[string]any, error) {
	// Windows editors write a BOM into JSON files such as
	// claude_desktop_config.json; encoding/json rejects it.
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	var doc any
	switch format {
	case FormatYAML:
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) { // EOF: only comments
			return nil, fmt.Errorf("cannot parse YAML: %w", yamlSyntaxError(err))
		}
		var extra any
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, errors.New("cannot parse YAML: the file must hold exactly one document")
		}
	case FormatJSON:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("cannot parse JSON: %s", describeJSONError(data, err))
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, errors.New("cannot parse JSON: unexpected data after the top-level object")
		}
	case FormatTOML:
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

// yamlSyntaxError gives a yaml.v3 syntax error the line it is on, counted
// from 1 as an editor does: yaml.v3 names the line before it for every
// parser error ("did not find expected key" under line 3 said line 2) and
// no line for a problem on the first line. Other errors are returned as
// they are.
func yamlSyntaxError(err error) error {
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

var durationType = reflect.TypeFor[time.Duration]()

// decoder fills typed values from the generic tree. It is strict (unknown
// keys are errors), keeps map keys as written, matches field names
// case-insensitively, and never puts a value in an error message.
type decoder struct {
	problems *problems
}

func (d *decoder) decode(key string, raw any, out reflect.Value) {
	if raw == nil {
		return // null and empty entries leave the zero value
	}
	if out.Type() == durationType {
		d.duration(key, raw, out)
		return
	}
	switch out.Kind() {
	case reflect.Pointer:
		elem := reflect.New(out.Type().Elem())
		d.decode(key, raw, elem.Elem())
		out.Set(elem)
	case reflect.Interface:
		if out.NumMethod() != 0 {
			d.problems.add(key, "unsupported setting type")
			return
		}
		out.Set(reflect.ValueOf(raw))
	case reflect.String:
		d.string(key, raw, out)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			d.problems.addf(key, "expected true or false, got %s", describe(raw))
			return
		}
		out.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := wholeNumber(raw)
		if !ok || out.OverflowInt(n) {
			d.problems.addf(key, "expected an integer, got %s", describe(raw))
			return
		}
		out.SetInt(n)
	case reflect.Float32, reflect.Float64:
		switch n := raw.(type) {
		case int64:
			out.SetFloat(float64(n))
		case float64:
			out.SetFloat(n)
		default:
			d.problems.addf(key, "expected a number, got %s", describe(raw))
		}
	case reflect.Slice:
		list, ok := raw.([]any)
		if !ok {
			d.problems.addf(key, "expected a list, got %s", describe(raw))
			return
		}
		s := reflect.MakeSlice(out.Type(), len(list), len(list))
		for i, e := range list {
			d.decode(indexKey(key, i), e, s.Index(i))
		}
		out.Set(s)
	case reflect.Map:
		d.mapping(key, raw, out)
	case reflect.Struct:
		d.structure(key, raw, out)
	default:
		d.problems.add(key, "unsupported setting type")
	}
}

func (d *decoder) duration(key string, raw any, out reflect.Value) {
	s, ok := raw.(string)
	if !ok {
		d.problems.addf(key, `expected a duration such as "60s" or "10m", got %s`, describe(raw))
		return
	}
	dur, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		d.problems.add(key, `invalid duration; use Go syntax such as "60s", "1m30s" or "10m"`)
		return
	}
	out.SetInt(int64(dur))
}

// string accepts integers and booleans too, because YAML users write
// env: {PORT: 8080} and expect "8080". Floats are refused: their text
// would not survive the round trip (1.10 would become "1.1").
func (d *decoder) string(key string, raw any, out reflect.Value) {
	switch v := raw.(type) {
	case string:
		out.SetString(v)
	case int64:
		out.SetString(strconv.FormatInt(v, 10))
	case bool:
		out.SetString(strconv.FormatBool(v))
	case float64:
		d.problems.add(key, "expected a string, got a number; put the value in quotes")
	default:
		d.problems.addf(key, "expected a string, got %s", describe(raw))
	}
}

func wholeNumber(raw any) (int64, bool) {
	switch n := raw.(type) {
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && n >= math.MinInt64 && n <= math.MaxInt64 {
			return int64(n), true
		}
	}
	return 0, false
}

func (d *decoder) mapping(key string, raw any, out reflect.Value) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.problems.addf(key, "expected a mapping, got %s", describe(raw))
		return
	}
	if out.Type().Key().Kind() != reflect.String {
		d.problems.add(key, "unsupported setting type")
		return
	}
	result := reflect.MakeMapWithSize(out.Type(), len(m))
	for _, name := range sortedKeys(m) {
		elem := reflect.New(out.Type().Elem()).Elem()
		d.decode(childKey(key, name), m[name], elem)
		result.SetMapIndex(reflect.ValueOf(name).Convert(out.Type().Key()), elem)
	}
	out.Set(result)
}

type field struct {
	name  string // canonical name, from the json tag
	index int
}

// settingFields lists the settable fields of a config struct by their
// json names; fields tagged "-" (such as Server.Name) are not settings.
func settingFields(t reflect.Type) []field {
	var fields []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		fields = append(fields, field{name: name, index: i})
	}
	return fields
}

func (d *decoder) structure(key string, raw any, out reflect.Value) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.problems.addf(key, "expected a mapping, got %s", describe(raw))
		return
	}
	fields := settingFields(out.Type())
	usedBy := make(map[int]string)
	for _, name := range sortedKeys(m) {
		f, ok := matchField(fields, name)
		if !ok {
			d.problems.add(childKey(key, name), unknownKeyMessage(name, fields))
			continue
		}
		if other, dup := usedBy[f.index]; dup {
			d.problems.addf(childKey(key, name), "same setting as key %q; keep only one", other)
			continue
		}
		usedBy[f.index] = name
		d.decode(childKey(key, f.name), m[name], out.Field(f.index))
	}
}

func matchField(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, name) {
			return f, true
		}
	}
	return field{}, false
}

func unknownKeyMessage(name string, fields []field) string {
	best, bestDist := "", math.MaxInt
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
		if dist := editDistance(strings.ToLower(name), strings.ToLower(f.name)); dist < bestDist {
			best, bestDist = f.name, dist
		}
	}
	if bestDist <= 2 && bestDist < len(name)/2+1 {
		return fmt.Sprintf("unknown key (did you mean %q?)", best)
	}
	return "unknown key (valid keys: " + strings.Join(names, ", ") + ")"
}

// editDistance is the Levenshtein distance, for "did you mean" hints.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
