package document

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/config/internal/problem"
)

// DurationType is time.Duration's type: settings of it are written "60s".
var DurationType = reflect.TypeFor[time.Duration]()

// Decoder fills typed values from the generic tree. It is strict (unknown
// keys are errors), keeps map keys as written, matches field names
// case-insensitively, and never puts a value in an error message.
type Decoder struct {
	Problems *problem.List
}

// Decode fills out from raw, the part of the tree at key.
func (d *Decoder) Decode(key string, raw any, out reflect.Value) {
	if raw == nil {
		return // null and empty entries leave the zero value
	}
	if out.Type() == DurationType {
		d.duration(key, raw, out)
		return
	}
	switch out.Kind() {
	case reflect.Pointer:
		elem := reflect.New(out.Type().Elem())
		d.Decode(key, raw, elem.Elem())
		out.Set(elem)
	case reflect.Interface:
		if out.NumMethod() != 0 {
			d.Problems.Add(key, "unsupported setting type")
			return
		}
		out.Set(reflect.ValueOf(raw))
	case reflect.String:
		d.string(key, raw, out)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			d.Problems.Addf(key, "expected true or false, got %s", describe(raw))
			return
		}
		out.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := wholeNumber(raw)
		if !ok || out.OverflowInt(n) {
			d.Problems.Addf(key, "expected an integer, got %s", describe(raw))
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
			d.Problems.Addf(key, "expected a number, got %s", describe(raw))
		}
	case reflect.Slice:
		list, ok := raw.([]any)
		if !ok {
			d.Problems.Addf(key, "expected a list, got %s", describe(raw))
			return
		}
		s := reflect.MakeSlice(out.Type(), len(list), len(list))
		for i, e := range list {
			d.Decode(problem.Index(key, i), e, s.Index(i))
		}
		out.Set(s)
	case reflect.Map:
		d.mapping(key, raw, out)
	case reflect.Struct:
		d.structure(key, raw, out)
	default:
		d.Problems.Add(key, "unsupported setting type")
	}
}

func (d *Decoder) duration(key string, raw any, out reflect.Value) {
	s, ok := raw.(string)
	if !ok {
		d.Problems.Addf(key, `expected a duration such as "60s" or "10m", got %s`, describe(raw))
		return
	}
	dur, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		d.Problems.Add(key, `invalid duration; use Go syntax such as "60s", "1m30s" or "10m"`)
		return
	}
	out.SetInt(int64(dur))
}

// string accepts integers and booleans too, because YAML users write
// env: {PORT: 8080} and expect "8080". Floats are refused: their text
// would not survive the round trip (1.10 would become "1.1").
func (d *Decoder) string(key string, raw any, out reflect.Value) {
	switch v := raw.(type) {
	case string:
		out.SetString(v)
	case int64:
		out.SetString(strconv.FormatInt(v, 10))
	case bool:
		out.SetString(strconv.FormatBool(v))
	case float64:
		d.Problems.Add(key, "expected a string, got a number; put the value in quotes")
	default:
		d.Problems.Addf(key, "expected a string, got %s", describe(raw))
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

func (d *Decoder) mapping(key string, raw any, out reflect.Value) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.Problems.Addf(key, "expected a mapping, got %s", describe(raw))
		return
	}
	if out.Type().Key().Kind() != reflect.String {
		d.Problems.Add(key, "unsupported setting type")
		return
	}
	result := reflect.MakeMapWithSize(out.Type(), len(m))
	for _, name := range problem.SortedKeys(m) {
		elem := reflect.New(out.Type().Elem()).Elem()
		d.Decode(problem.Key(key, name), m[name], elem)
		result.SetMapIndex(reflect.ValueOf(name).Convert(out.Type().Key()), elem)
	}
	out.Set(result)
}

// Field is a setting of a config struct.
type Field struct {
	Name  string // canonical name, from the json tag
	Index int
}

// Fields lists the settable fields of a config struct by their
// json names; fields tagged "-" (such as Server.Name) are not settings.
func Fields(t reflect.Type) []Field {
	var fields []Field
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
		fields = append(fields, Field{Name: name, Index: i})
	}
	return fields
}

func (d *Decoder) structure(key string, raw any, out reflect.Value) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.Problems.Addf(key, "expected a mapping, got %s", describe(raw))
		return
	}
	fields := Fields(out.Type())
	usedBy := make(map[int]string)
	for _, name := range problem.SortedKeys(m) {
		f, ok := matchField(fields, name)
		if !ok {
			d.Problems.Add(problem.Key(key, name), unknownKeyMessage(name, fields))
			continue
		}
		if other, dup := usedBy[f.Index]; dup {
			d.Problems.Addf(problem.Key(key, name), "same setting as key %q; keep only one", other)
			continue
		}
		usedBy[f.Index] = name
		d.Decode(problem.Key(key, f.Name), m[name], out.Field(f.Index))
	}
}

func matchField(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return Field{}, false
}

func unknownKeyMessage(name string, fields []Field) string {
	best, bestDist := "", math.MaxInt
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
		if dist := editDistance(strings.ToLower(name), strings.ToLower(f.Name)); dist < bestDist {
			best, bestDist = f.Name, dist
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
