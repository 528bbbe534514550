package wirecheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestMessageProblem(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":` + nested(9000) + `}}`, ""},
		{`this is not JSON {`, "not JSON (syntax error at byte 2)"},
		{`{"jsonrpc":"2.0","id":1,"result":`, "not JSON (syntax error at byte 33)"},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":` + nested(20000) + `}}`, "nested too deeply"},
		{`[1,2]`, "not a JSON object"},
		{`"text"`, "not a JSON object"},
		// JSON's whitespace (space, tab, CR, LF) may surround a message.
		{" \t\r\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + " \n", ""},
		{" [1,2]", "not a JSON object"},
	}
	for _, tc := range tests {
		if got := MessageProblem([]byte(tc.msg)); got != tc.want {
			t.Errorf("MessageProblem(%.40q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// readAllLines is every line g hands on, each ended by a newline.
func readAllLines(g *LineGuard) string {
	var out strings.Builder
	for {
		line, err := g.ReadLine()
		if err != nil {
			return out.String()
		}
		out.Write(line)
		out.WriteByte('\n')
	}
}

// TestLineGuard: lines are handed on without their surrounding space,
// blank ones skipped; an oversized one is reported, and never quoted.
func TestLineGuard(t *testing.T) {
	const secret = "sk-do-not-echo"
	valid := `{"jsonrpc":"2.0","id":1,"result":{}}`
	input := strings.Join([]string{
		valid,
		"",
		"  \r",
		"garbage " + secret,
		`{"jsonrpc":"2.0","id":3,"result":"` + secret + strings.Repeat("x", 70000) + `"}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\r",
		"unterminated",
	}, "\n")
	var failures []string
	g := NewLineGuard(strings.NewReader(input), 64<<10, func(err *ProtocolError) {
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%v is not ErrProtocol", err)
		}
		failures = append(failures, err.Error())
	})
	if out, want := readAllLines(g), valid+"\n"+"garbage "+secret+"\n"+`{"jsonrpc":"2.0","id":4,"result":{}}`+"\n"; out != want {
		t.Errorf("passed on %q, want %q", out, want)
	}
	want := []string{"server sent a message larger than 64 KiB (limits.maxResponseBytes)"}
	if strings.Join(failures, "|") != strings.Join(want, "|") {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(failures, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(failures, ""), secret) {
		t.Error("a failure quotes the line")
	}
}

func FuzzLineGuard(f *testing.F) {
	for _, seed := range []string{"{}\n", "x\n{}\n", "\n\n", `{"a":[[[]]]}` + "\n" + strings.Repeat("y", 300) + "\n{}", "\r\n{}\r\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g := NewLineGuard(strings.NewReader(in), 256, func(*ProtocolError) {})
		for _, line := range strings.SplitAfter(readAllLines(g), "\n") {
			if line == "" {
				continue
			}
			msg := strings.TrimSuffix(line, "\n")
			if len(msg) == 0 || len(msg) > 256 || string(bytes.TrimSpace([]byte(msg))) != msg || !strings.Contains(in, msg) {
				t.Fatalf("passed on %q", line)
			}
		}
	})
}

// Lines longer than the guard's read buffer are assembled and handed on
// whole, and the short lines around them (handed on from the buffer
// itself) are not disturbed by them.
func TestLineGuardLongLines(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("a", 100<<10) + `"}`
	tooLong := `{"jsonrpc":"2.0","id":2,"result":"` + strings.Repeat("b", 300<<10) + `"}`
	short := func(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id) }
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
		fails int
	}{
		{"long between short", []string{short(10), long, short(11)}, []string{short(10), long, short(11)}, 0},
		{"too long between short", []string{short(10), tooLong, short(11)}, []string{short(10), short(11)}, 1},
		{"long after too long", []string{tooLong, long, short(12)}, []string{long, short(12)}, 1},
		{"long last, unterminated", []string{short(10), long + "\n" + long[:1000]}, []string{short(10), long}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fails := 0
			g := NewLineGuard(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), 256<<10, func(*ProtocolError) { fails++ })
			if strings.HasSuffix(tc.name, "unterminated") {
				g = NewLineGuard(strings.NewReader(strings.Join(tc.lines, "\n")), 256<<10, func(*ProtocolError) { fails++ })
			}
			out := readAllLines(g)
			if want := strings.Join(tc.want, "\n") + "\n"; out != want {
				t.Errorf("passed on %d bytes, want %d", len(out), len(want))
			}
			if fails != tc.fails {
				t.Errorf("%d failures, want %d", fails, tc.fails)
			}
		})
	}
}
