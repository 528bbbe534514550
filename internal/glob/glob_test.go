package glob

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "drop_db/all", true},
		{"drop_*", "drop_db", true},
		{"drop_*", "drop_db/all", true},
		{"drop_*", "drop_", true},
		{"drop_*", "Drop_db", false},
		{"*/all", "drop_db/all", true},
		{"*.sql", "a/b.sql", true},
		{"get_order", "get_order", true},
		{"get_order", "get_orders", false},
		{"get_?rder", "get_order", true},
		{"get_?rder", "get_rder", false},
		{"?", "é", true},
		{"??", "é", false},
		{"[abc]x", "bx", true},
		{"[abc]x", "dx", false},
		{"[a-c]x", "cx", true},
		{"[!a-c]x", "cx", false},
		{"[^a-c]x", "dx", true},
		{"[]]", "]", true},
		{"[!]]", "a", true},
		{"[a\\-z]", "-", true},
		{"[a-]", "-", true},
		{"[é-ë]", "ê", true},
		{"\\*", "*", true},
		{"\\*", "a", false},
		{"a\\?b", "a?b", true},
		{"a\\\\b", "a\\b", true},
		{"\\é", "é", true},
		{"*a*b*c*", "xxaxxbxxcxx", true},
		{"*a*b*c*", "xxaxxcxxbxx", false},
		{"a*", "", false},
		{"", "", false},
		{"", "x", false},
		{"[", "[", false},
		{"a\\", "a\\", false},
		{"[z-a]", "b", false},
		{"*[", "x[", false},
	}
	for _, tc := range tests {
		if got := Match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
		g, err := Compile(tc.pattern)
		if err != nil {
			continue
		}
		if got := g.Match(tc.name); got != tc.want {
			t.Errorf("Compile(%q).Match(%q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		pattern string
		err     error
	}{
		{"*", nil},
		{"drop_*", nil},
		{"[a-z]*", nil},
		{"[]a]", nil},
		{"\\[", nil},
		{"", ErrEmpty},
		{"a\\", ErrTrailingEsc},
		{"[a-z", ErrUnterminated},
		{"[]", ErrUnterminated},
		{"[!]", ErrUnterminated},
		{"[z-a]", ErrRangeOrder},
		{"[a\\", ErrTrailingEsc},
	}
	for _, tc := range tests {
		err := Validate(tc.pattern)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Validate(%q) = %v, want %v", tc.pattern, err, tc.err)
		}
		if _, cerr := Compile(tc.pattern); (cerr == nil) != (err == nil) {
			t.Errorf("Compile(%q) = %v, Validate says %v", tc.pattern, cerr, err)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, name := range []string{"plain", "a*b", "what?", "[x]", `back\slash`, "drop_db/all", "é*"} {
		p := Escape(name)
		g, err := Compile(p)
		if err != nil {
			t.Fatalf("Escape(%q) = %q: %v", name, p, err)
		}
		if !g.Match(name) {
			t.Errorf("Escape(%q) = %q does not match the name", name, p)
		}
		if strings.ContainsAny(name, special) && g.Match(name+"x") {
			t.Errorf("Escape(%q) = %q matches more than the name", name, p)
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	g, err := Compile("drop_*[0-9]")
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { g.Match("drop_db/all_7") }); n != 0 {
		t.Errorf("Pattern.Match allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { Match("drop_*[0-9]", "drop_db/all_7") }); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}

// reference is the regular-expression translation the approvals package
// used before this package existed: the oracle for the fuzz target. With
// path it is MatchPath's: the caller puts pathSep where the name has "/",
// and wildcards and negated classes never take it.
func reference(p string, path bool) (*regexp.Regexp, bool) {
	star, any, not := ".*", ".", ""
	if path {
		star, any, not = "[^"+pathSep+"]*", "[^"+pathSep+"]", pathSep
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			b.WriteString(star)
		case '?':
			b.WriteString(any)
		case '\\':
			if i+1 >= len(rs) {
				return nil, false
			}
			i++
			if path && rs[i] == '/' {
				b.WriteString(pathSep)
				continue
			}
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			var c strings.Builder
			c.WriteByte('[')
			j := i + 1
			negated := j < len(rs) && (rs[j] == '!' || rs[j] == '^')
			if negated {
				c.WriteByte('^')
				j++
			}
			first, closed := j, false
			for ; j < len(rs); j++ {
				r := rs[j]
				switch {
				case r == ']' && j > first:
					if negated {
						c.WriteString(not)
					}
					c.WriteByte(']')
					closed = true
				case r == '\\':
					if j+1 >= len(rs) {
						return nil, false
					}
					j++
					c.WriteString(regexp.QuoteMeta(string(rs[j])))
				case r == '-' && j > first && j+1 < len(rs) && rs[j+1] != ']':
					c.WriteByte('-')
				default:
					c.WriteString(regexp.QuoteMeta(string(r)))
				}
				if closed {
					break
				}
			}
			if !closed {
				return nil, false
			}
			b.WriteString(c.String())
			i = j
		case '/':
			if path {
				b.WriteString(pathSep)
				continue
			}
			b.WriteString("/")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"drop_*", "drop_db/all"}, {"*", ""}, {"a?c", "abc"}, {"[a-c]*", "b/x"}, {"[!a]", "b"},
		{"\\*x", "*x"}, {"/opt/*/x", "/opt/a/b/x"}, {"/o?t/[!a]*", "/o/t/b/c"}, {"/a\\/*", "/a/b"}, {"*a*b", "aXbYb"}, {"[]]", "]"}, {"é?", "éé"}, {"[z-a]", "q"}, {"a\\", "a"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) || len(pattern) > 64 || len(name) > 256 {
			return
		}
		got := Match(pattern, name)
		if Validate(pattern) != nil {
			if got {
				t.Fatalf("malformed pattern %q matched %q", pattern, name)
			}
			return
		}
		re, ok := reference(pattern, false)
		if !ok {
			return // the reference rejects what it cannot translate
		}
		if want := re.MatchString(name); got != want {
			t.Fatalf("Match(%q, %q) = %v, reference %v", pattern, name, got, want)
		}
		if strings.ContainsFunc(pattern+name, func(r rune) bool { return r >= 0xe000 }) {
			return // pathSep must be a rune neither holds, nor any class range
		}
		re, _ = reference(pattern, true)
		if got, want := MatchPath(pattern, name), re.MatchString(strings.ReplaceAll(name, "/", pathSep)); got != want {
			t.Fatalf("MatchPath(%q, %q) = %v, reference %v", pattern, name, got, want)
		}
	})
}

// pathSep stands for "/" in the names reference matches with path.
const pathSep = "\ue000"

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"/opt/mcp/bin/*", "/opt/mcp/bin/server", true},
		{"/opt/mcp/bin/*", "/opt/mcp/bin/sub/server", false},
		{"/opt/mcp/bin/*", "/opt/mcp/bin/../../evil/x", false},
		{"/opt/mcp/*/server", "/opt/mcp/a/server", true},
		{"/opt/mcp/*/server", "/opt/mcp/a/b/server", false},
		{"/opt/mcp/bin/?", "/opt/mcp/bin//", false},
		{"/opt/mcp/bin[/]x", "/opt/mcp/bin/x", false},
		{"/opt/mcp/bin[!a]x", "/opt/mcp/bin/x", false},
		{"/opt/mcp/bin/server", "/opt/mcp/bin/server", true},
		{"/opt/*", "/opt/", true},
		{"*", "/anything", false},
		{"*", "name", true},
	}
	for _, tt := range tests {
		if got := MatchPath(tt.pattern, tt.name); got != tt.want {
			t.Errorf("MatchPath(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}
