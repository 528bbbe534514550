package demo

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// The demo's databases are small in-memory tables that understand the SQL
// a model writes to read them: enough to tell the story (each instance is
// its own set of tables; a query for payroll's table on checkout finds no
// such table) without linking an SQL engine into the binary. The subset:
//
//	SELECT * | COUNT(*) | col, ... FROM table [WHERE cond] [ORDER BY col [ASC|DESC], ...] [LIMIT n]
//	DELETE FROM table WHERE cond        (delete_rows: the table and the condition)
//
// cond combines col-or-literal comparisons (=, ==, !=, <>, <, <=, >, >=),
// [NOT] LIKE with % and _, [NOT] IN (...), IS [NOT] NULL, AND, OR, NOT and
// parentheses. Keywords and names are case-insensitive; strings are in
// single quotes ('' for a quote).

// errSQL marks a statement the subset cannot run.
var errSQL = errors.New("SQL error")

// database is one instance: named tables, safe for concurrent use.
type database struct {
	mu     sync.Mutex
	tables map[string]*table // by lower-case name
}

type table struct {
	name string
	cols []string
	rows [][]any // int64, float64, string or nil
}

func newDatabase(tables ...*table) *database {
	db := &database{tables: map[string]*table{}}
	for _, t := range tables {
		db.tables[strings.ToLower(t.name)] = t
	}
	return db
}

func (db *database) table(name string) (*table, error) {
	t, ok := db.tables[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("%w: no such table: %s", errSQL, name)
	}
	return t, nil
}

func (t *table) col(name string) (int, error) {
	for i, c := range t.cols {
		if strings.EqualFold(c, name) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: no such column: %s", errSQL, name)
}

// query runs one SELECT and renders the result as the tool's text.
func (db *database) query(q string) (string, error) {
	p, err := newParser(q)
	if err != nil {
		return "", err
	}
	if err := p.keyword("SELECT"); err != nil {
		return "", err
	}
	var names []string
	count, star := false, false
	switch {
	case p.peekSymbol("*"):
		p.next()
		star = true
	case p.peekKeyword("COUNT"):
		p.next()
		for _, s := range []string{"(", "*", ")"} {
			if err := p.symbol(s); err != nil {
				return "", err
			}
		}
		count = true
	default:
		for {
			name, err := p.ident()
			if err != nil {
				return "", err
			}
			names = append(names, name)
			if !p.peekSymbol(",") {
				break
			}
			p.next()
		}
	}
	if err := p.keyword("FROM"); err != nil {
		return "", err
	}
	tname, err := p.ident()
	if err != nil {
		return "", err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(tname)
	if err != nil {
		return "", err
	}
	var where expr
	if p.peekKeyword("WHERE") {
		p.next()
		if where, err = p.condition(t); err != nil {
			return "", err
		}
	}
	type orderKey struct {
		col  int
		desc bool
	}
	var order []orderKey
	if p.peekKeyword("ORDER") {
		p.next()
		if err := p.keyword("BY"); err != nil {
			return "", err
		}
		for {
			name, err := p.ident()
			if err != nil {
				return "", err
			}
			i, err := t.col(name)
			if err != nil {
				return "", err
			}
			k := orderKey{col: i}
			if p.peekKeyword("DESC") {
				p.next()
				k.desc = true
			} else if p.peekKeyword("ASC") {
				p.next()
			}
			order = append(order, k)
			if !p.peekSymbol(",") {
				break
			}
			p.next()
		}
	}
	limit := -1
	if p.peekKeyword("LIMIT") {
		p.next()
		tok := p.next()
		n, err := strconv.Atoi(tok.text)
		if tok.kind != tokNumber || err != nil || n < 0 {
			return "", fmt.Errorf("%w: LIMIT needs a whole number", errSQL)
		}
		limit = n
	}
	if p.peekSymbol(";") {
		p.next()
	}
	if !p.done() {
		return "", p.unexpected()
	}

	cols := make([]int, 0, len(t.cols))
	if star {
		for i := range t.cols {
			cols = append(cols, i)
		}
	}
	for _, name := range names {
		i, err := t.col(name)
		if err != nil {
			return "", err
		}
		cols = append(cols, i)
	}
	var rows [][]any
	for _, row := range t.rows {
		if where == nil || truthy(where(row)) {
			rows = append(rows, row)
		}
	}
	if count {
		return fmt.Sprintf("COUNT(*)\n%d\n(1 rows)", len(rows)), nil
	}
	sort.SliceStable(rows, func(a, b int) bool {
		for _, k := range order {
			c := compare(rows[a][k.col], rows[b][k.col])
			if c != 0 {
				return (c < 0) != k.desc
			}
		}
		return false
	})
	if limit >= 0 && limit < len(rows) {
		rows = rows[:limit]
	}
	var b strings.Builder
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = t.cols[c]
	}
	b.WriteString(strings.Join(header, " | "))
	b.WriteString("\n")
	for _, row := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = render(row[c])
		}
		b.WriteString(strings.Join(cells, " | "))
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "(%d rows)", len(rows))
	return b.String(), nil
}

// deleteWhere deletes the rows of a table matching a condition and returns
// how many went.
func (db *database) deleteWhere(tname, cond string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(tname)
	if err != nil {
		return 0, err
	}
	p, err := newParser(cond)
	if err != nil {
		return 0, err
	}
	where, err := p.condition(t)
	if err != nil {
		return 0, err
	}
	if !p.done() {
		return 0, p.unexpected()
	}
	kept := t.rows[:0:0]
	for _, row := range t.rows {
		if !truthy(where(row)) {
			kept = append(kept, row)
		}
	}
	n := len(t.rows) - len(kept)
	t.rows = kept
	return n, nil
}

// dropAll drops every table.
func (db *database) dropAll() {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.tables = map[string]*table{}
}

func render(v any) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprint(v)
}

// ---- conditions ----

// expr evaluates to true, false or nil (SQL's unknown) for one row.
type expr func(row []any) any

func truthy(v any) bool { b, ok := v.(bool); return ok && b }

// number reads a value as a number when it is one (or a string that is).
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil
	}
	return 0, false
}

// compare orders two non-nil values: numerically when both are numbers,
// else as text.
func compare(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		default:
			return 1
		}
	}
	x, xok := number(a)
	y, yok := number(b)
	if xok && yok {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// like matches SQL LIKE: % any run, _ one character, ASCII case folded.
func like(s, pattern string) bool {
	sr, pr := []rune(strings.ToLower(s)), []rune(strings.ToLower(pattern))
	// Iterative matcher with one backtrack point per %.
	si, pi, star, mark := 0, 0, -1, 0
	for si < len(sr) {
		switch {
		case pi < len(pr) && (pr[pi] == '_' || pr[pi] == sr[si]):
			si++
			pi++
		case pi < len(pr) && pr[pi] == '%':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pr) && pr[pi] == '%' {
		pi++
	}
	return pi == len(pr)
}

func (p *parser) condition(t *table) (expr, error) {
	left, err := p.conjunction(t)
	if err != nil {
		return nil, err
	}
	for p.peekKeyword("OR") {
		p.next()
		right, err := p.conjunction(t)
		if err != nil {
			return nil, err
		}
		l := left
		left = func(row []any) any {
			a, b := l(row), right(row)
			if truthy(a) || truthy(b) {
				return true
			}
			if a == nil || b == nil {
				return nil
			}
			return false
		}
	}
	return left, nil
}

func (p *parser) conjunction(t *table) (expr, error) {
	left, err := p.negation(t)
	if err != nil {
		return nil, err
	}
	for p.peekKeyword("AND") {
		p.next()
		right, err := p.negation(t)
		if err != nil {
			return nil, err
		}
		l := left
		left = func(row []any) any {
			a, b := l(row), right(row)
			if a == false || b == false {
				return false
			}
			if a == nil || b == nil {
				return nil
			}
			return true
		}
	}
	return left, nil
}

func (p *parser) negation(t *table) (expr, error) {
	if p.peekKeyword("NOT") {
		p.next()
		inner, err := p.negation(t)
		if err != nil {
			return nil, err
		}
		return func(row []any) any {
			if v, ok := inner(row).(bool); ok {
				return !v
			}
			return nil
		}, nil
	}
	return p.predicate(t)
}

// maxDepth bounds nested parentheses and NOTs.
const maxDepth = 64

func (p *parser) predicate(t *table) (expr, error) {
	if p.peekSymbol("(") {
		p.depth++
		if p.depth > maxDepth {
			return nil, fmt.Errorf("%w: conditions nested too deeply", errSQL)
		}
		p.next()
		inner, err := p.condition(t)
		if err != nil {
			return nil, err
		}
		p.depth--
		return inner, p.symbol(")")
	}
	left, err := p.operand(t)
	if err != nil {
		return nil, err
	}
	not := false
	if p.peekKeyword("IS") {
		p.next()
		if p.peekKeyword("NOT") {
			p.next()
			not = true
		}
		if err := p.keyword("NULL"); err != nil {
			return nil, err
		}
		return func(row []any) any { return (left(row) == nil) != not }, nil
	}
	if p.peekKeyword("NOT") {
		p.next()
		not = true
		if !p.peekKeyword("LIKE") && !p.peekKeyword("IN") {
			return nil, p.unexpected()
		}
	}
	switch {
	case p.peekKeyword("LIKE"):
		p.next()
		right, err := p.operand(t)
		if err != nil {
			return nil, err
		}
		return func(row []any) any {
			a, b := left(row), right(row)
			if a == nil || b == nil {
				return nil
			}
			return like(render(a), render(b)) != not
		}, nil
	case p.peekKeyword("IN"):
		p.next()
		if err := p.symbol("("); err != nil {
			return nil, err
		}
		var list []expr
		for {
			e, err := p.operand(t)
			if err != nil {
				return nil, err
			}
			list = append(list, e)
			if !p.peekSymbol(",") {
				break
			}
			p.next()
		}
		if err := p.symbol(")"); err != nil {
			return nil, err
		}
		return func(row []any) any {
			a := left(row)
			if a == nil {
				return nil
			}
			for _, e := range list {
				if b := e(row); b != nil && compare(a, b) == 0 {
					return !not
				}
			}
			return not
		}, nil
	}
	tok := p.peek()
	var test func(int) bool
	switch tok.text {
	case "=", "==":
		test = func(c int) bool { return c == 0 }
	case "!=", "<>":
		test = func(c int) bool { return c != 0 }
	case "<":
		test = func(c int) bool { return c < 0 }
	case "<=":
		test = func(c int) bool { return c <= 0 }
	case ">":
		test = func(c int) bool { return c > 0 }
	case ">=":
		test = func(c int) bool { return c >= 0 }
	default:
		return nil, p.unexpected()
	}
	p.next()
	right, err := p.operand(t)
	if err != nil {
		return nil, err
	}
	return func(row []any) any {
		a, b := left(row), right(row)
		if a == nil || b == nil {
			return nil
		}
		return test(compare(a, b))
	}, nil
}

// operand is a column, a string, a number or NULL.
func (p *parser) operand(t *table) (expr, error) {
	tok := p.peek()
	if tok.kind == tokString || tok.kind == tokNumber || tok.kind == tokIdent {
		p.next()
	}
	switch tok.kind {
	case tokString:
		s := tok.text
		return func([]any) any { return s }, nil
	case tokNumber:
		if n, err := strconv.ParseInt(tok.text, 10, 64); err == nil {
			return func([]any) any { return n }, nil
		}
		f, err := strconv.ParseFloat(tok.text, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: bad number %s", errSQL, tok.text)
		}
		return func([]any) any { return f }, nil
	case tokIdent:
		if strings.EqualFold(tok.text, "NULL") {
			return func([]any) any { return nil }, nil
		}
		i, err := t.col(tok.text)
		if err != nil {
			return nil, err
		}
		return func(row []any) any { return row[i] }, nil
	}
	return nil, p.unexpected()
}

// ---- tokens ----

type tokKind int

const (
	tokEnd tokKind = iota
	tokIdent
	tokNumber
	tokString
	tokSymbol
)

type token struct {
	kind tokKind
	text string
}

type parser struct {
	toks  []token
	pos   int
	depth int
}

// maxTokens bounds what one statement may hold.
const maxTokens = 4096

func newParser(s string) (*parser, error) {
	p := &parser{}
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
			continue
		case r == '\'':
			var b strings.Builder
			i++
			for {
				if i >= len(rs) {
					return nil, fmt.Errorf("%w: unterminated string", errSQL)
				}
				if rs[i] == '\'' {
					if i+1 < len(rs) && rs[i+1] == '\'' {
						b.WriteRune('\'')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteRune(rs[i])
				i++
			}
			p.toks = append(p.toks, token{tokString, b.String()})
		case r == '"' || r == '`':
			// A quoted name.
			end := i + 1
			for end < len(rs) && rs[end] != r {
				end++
			}
			if end >= len(rs) {
				return nil, fmt.Errorf("%w: unterminated quoted name", errSQL)
			}
			p.toks = append(p.toks, token{tokIdent, string(rs[i+1 : end])})
			i = end + 1
		case r == '_' || unicode.IsLetter(r):
			start := i
			for i < len(rs) && (rs[i] == '_' || unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i])) {
				i++
			}
			p.toks = append(p.toks, token{tokIdent, string(rs[start:i])})
		case unicode.IsDigit(r) || (r == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])) ||
			(r == '-' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			start := i
			i++
			for i < len(rs) && (unicode.IsDigit(rs[i]) || rs[i] == '.') {
				i++
			}
			p.toks = append(p.toks, token{tokNumber, string(rs[start:i])})
		default:
			two := ""
			if i+1 < len(rs) {
				two = string(rs[i : i+2])
			}
			switch two {
			case "<=", ">=", "<>", "!=", "==":
				p.toks = append(p.toks, token{tokSymbol, two})
				i += 2
				continue
			}
			if !strings.ContainsRune("=<>(),*;", r) {
				return nil, fmt.Errorf("%w: unexpected character %q", errSQL, r)
			}
			p.toks = append(p.toks, token{tokSymbol, string(r)})
			i++
		}
		if len(p.toks) > maxTokens {
			return nil, fmt.Errorf("%w: statement too long", errSQL)
		}
	}
	return p, nil
}

func (p *parser) peek() token {
	if p.pos >= len(p.toks) {
		return token{kind: tokEnd}
	}
	return p.toks[p.pos]
}

func (p *parser) next() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

func (p *parser) peekKeyword(k string) bool {
	t := p.peek()
	return t.kind == tokIdent && strings.EqualFold(t.text, k)
}

func (p *parser) peekSymbol(s string) bool {
	t := p.peek()
	return t.kind == tokSymbol && t.text == s
}

func (p *parser) keyword(k string) error {
	if !p.peekKeyword(k) {
		return p.unexpected()
	}
	p.next()
	return nil
}

func (p *parser) symbol(s string) error {
	if !p.peekSymbol(s) {
		return p.unexpected()
	}
	p.next()
	return nil
}

func (p *parser) ident() (string, error) {
	t := p.peek()
	if t.kind != tokIdent {
		return "", p.unexpected()
	}
	p.next()
	return t.text, nil
}

func (p *parser) unexpected() error {
	t := p.peek()
	if t.kind == tokEnd {
		return fmt.Errorf("%w: incomplete statement", errSQL)
	}
	return fmt.Errorf("%w: syntax error near %q", errSQL, t.text)
}
