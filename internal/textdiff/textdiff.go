// Package textdiff owns the line diff the CLI shows at an approval question
// for a call that would write a file: a unified diff of the current content
// against the new, bounded in the work it does and the lines it returns.
package textdiff

import (
	"fmt"
	"strings"
)

// maxCells bounds the comparison table (lines differing between the two
// texts, after their common start and end are set aside).
const maxCells = 4_000_000

// Unified returns a unified diff of old against new with context lines
// around each change, at most maxLines lines long (then "… N more lines").
// It returns "" when the texts are equal, and a one-line summary when they
// differ too much to compare within its bound.
func Unified(oldName, newName, old, new string, context, maxLines int) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) > maxCells {
		return fmt.Sprintf("(%d lines now, %d after: too different to show a diff)\n", len(a), len(b))
	}
	ops := make([]op, 0, len(a)+len(b))
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', a[i]})
	}
	ops = append(ops, lcsOps(ma, mb)...)
	for i := len(a) - suf; i < len(a); i++ {
		ops = append(ops, op{' ', a[i]})
	}
	return render(oldName, newName, ops, context, maxLines)
}

type op struct {
	kind byte // ' ', '-', '+'
	line string
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lcsOps is the edit script of a longest common subsequence of a and b.
func lcsOps(a, b []string) []op {
	n, m := len(a), len(b)
	t := make([]int32, (n+1)*(m+1))
	at := func(i, j int) *int32 { return &t[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				*at(i, j) = *at(i+1, j+1) + 1
			} else {
				*at(i, j) = max(*at(i+1, j), *at(i, j+1))
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case *at(i+1, j) >= *at(i, j+1):
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, op{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, op{'+', b[j]})
	}
	return ops
}

// render writes the hunks of ops with context lines around each change.
func render(oldName, newName string, ops []op, context, maxLines int) string {
	var out []string
	out = append(out, "--- "+oldName+"\n", "+++ "+newName+"\n")
	oldLine, newLine := make([]int, len(ops)), make([]int, len(ops))
	o, n := 1, 1
	for i, x := range ops {
		oldLine[i], newLine[i] = o, n
		if x.kind != '+' {
			o++
		}
		if x.kind != '-' {
			n++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		stop := min(end+context+1, len(ops))
		oldCount, newCount := 0, 0
		for _, x := range ops[start:stop] {
			if x.kind != '+' {
				oldCount++
			}
			if x.kind != '-' {
				newCount++
			}
		}
		out = append(out, fmt.Sprintf("@@ -%d,%d +%d,%d @@\n", oldLine[start], oldCount, newLine[start], newCount))
		for _, x := range ops[start:stop] {
			line := x.line
			if !strings.HasSuffix(line, "\n") {
				line += "\n\\ No newline at end of file\n"
			}
			out = append(out, string(x.kind)+line)
		}
		i = stop
	}
	if maxLines > 0 && len(out) > maxLines {
		more := len(out) - maxLines
		out = append(out[:maxLines], fmt.Sprintf("… %d more lines\n", more))
	}
	return strings.Join(out, "")
}
