// Package wwwauth parses WWW-Authenticate headers (RFC 9110 §11.6.1) into
// their challenges: schemes, token68 forms and auth-params (names
// lower-cased, quoted values unquoted), bounded so that a hostile header
// costs little; it never fails, skipping what is malformed.
package wwwauth

import "strings"

// Challenge is one challenge of a header (oauth.Challenge documents it).
type Challenge struct {
	Scheme  string
	Token68 string
	Params  map[string]string
}

// Bounds that keep a hostile header from costing more than it is worth.
const (
	MaxChallenges = 16
	MaxParams     = 32
	maxHeader     = 16 << 10
)

// Parse parses the values of WWW-Authenticate headers into their
// challenges. It never fails: malformed parts are skipped, and parsing stops
// at a bounded number of challenges and parameters per challenge.
func Parse(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		if len(v) > maxHeader {
			v = v[:maxHeader]
		}
		p := challengeParser{s: v}
		for len(out) < MaxChallenges {
			c, ok := p.next()
			if !ok {
				break
			}
			out = append(out, c)
		}
	}
	return out
}

type challengeParser struct {
	s string
	i int
}

func isTchar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

func isToken68Char(b byte) bool {
	return isTchar(b) || b == '/'
}

func (p *challengeParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *challengeParser) skipSeparators() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a quoted-string starting at the opening quote.
func (p *challengeParser) quoted() string {
	p.i++ // opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return b.String()
		case '\\':
			if p.i+1 < len(p.s) {
				b.WriteByte(p.s[p.i+1])
				p.i += 2
				continue
			}
		}
		b.WriteByte(c)
		p.i++
	}
	return b.String()
}

// paramAhead reports whether the text at the cursor is "name =" (an
// auth-param) rather than a new scheme.
func (p *challengeParser) paramAhead() bool {
	j := p.i
	for j < len(p.s) && isTchar(p.s[j]) {
		j++
	}
	if j == p.i {
		return false
	}
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
		j++
	}
	return j < len(p.s) && p.s[j] == '='
}

func (p *challengeParser) next() (Challenge, bool) {
	for {
		p.skipSeparators()
		if p.i >= len(p.s) {
			return Challenge{}, false
		}
		scheme := p.token()
		if scheme == "" {
			p.i++ // not a token character: skip it
			continue
		}
		c := Challenge{Scheme: scheme, Params: map[string]string{}}
		p.skipSpace()
		// token68: a run of token68 characters followed by '='* and then
		// the end or a comma.
		if p.i < len(p.s) && !p.paramAhead() && p.s[p.i] != ',' {
			start := p.i
			for p.i < len(p.s) && isToken68Char(p.s[p.i]) {
				p.i++
			}
			for p.i < len(p.s) && p.s[p.i] == '=' {
				p.i++
			}
			c.Token68 = p.s[start:p.i]
			p.skipSpace()
			if p.i < len(p.s) && p.s[p.i] != ',' {
				// Not a token68 after all: resume at the next comma.
				for p.i < len(p.s) && p.s[p.i] != ',' {
					p.i++
				}
			}
			return c, true
		}
		for len(c.Params) < MaxParams {
			p.skipSeparators()
			if !p.paramAhead() {
				break
			}
			name := strings.ToLower(p.token())
			p.skipSpace()
			p.i++ // '='
			p.skipSpace()
			var val string
			if p.i < len(p.s) && p.s[p.i] == '"' {
				val = p.quoted()
			} else {
				val = p.token()
			}
			if _, dup := c.Params[name]; !dup {
				c.Params[name] = val
			}
			p.skipSpace()
			if p.i < len(p.s) && p.s[p.i] != ',' {
				// Garbage after a value: skip to the next comma.
				for p.i < len(p.s) && p.s[p.i] != ',' {
					p.i++
				}
			}
		}
		return c, true
	}
}
