package oauth

import (
	"net/http"
	"strings"
)

// Challenge is one challenge of a WWW-Authenticate header (RFC 9110 §11.6.1).
type Challenge struct {
	// Scheme is the auth scheme as sent ("Bearer").
	Scheme string
	// Token68 is the challenge's token68 form, if it used one.
	Token68 string
	// Params holds the auth-params, keys lower-cased, values unquoted.
	Params map[string]string
}

// Param returns the value of an auth-param (name compared case-insensitively).
func (c Challenge) Param(name string) string { return c.Params[strings.ToLower(name)] }

// Scopes returns the challenge's scope parameter split on spaces.
func (c Challenge) Scopes() []string { return strings.Fields(c.Param("scope")) }

// Bounds that keep a hostile header from costing more than it is worth.
const (
	maxChallenges      = 16
	maxChallengeParams = 32
	maxChallengeHeader = 16 << 10
)

// ParseChallenges parses the values of WWW-Authenticate headers into their
// challenges. It never fails: malformed parts are skipped, and parsing stops
// at a bounded number of challenges and parameters per challenge.
func ParseChallenges(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		if len(v) > maxChallengeHeader {
			v = v[:maxChallengeHeader]
		}
		p := challengeParser{s: v}
		for len(out) < maxChallenges {
			c, ok := p.next()
			if !ok {
				break
			}
			out = append(out, c)
		}
	}
	return out
}

// BearerChallenge returns the first Bearer challenge of a response's headers.
func BearerChallenge(h http.Header) (Challenge, bool) {
	for _, c := range ParseChallenges(h.Values("WWW-Authenticate")) {
		if strings.EqualFold(c.Scheme, "Bearer") {
			return c, true
		}
	}
	return Challenge{}, false
}

// AuthChallenge returns the challenge of a response's headers that
// concerns an OAuth access token: the first DPoP challenge when preferDPoP
// (the request presented a DPoP-bound token), else the first Bearer one;
// failing that, the first of either scheme.
func AuthChallenge(h http.Header, preferDPoP bool) (Challenge, bool) {
	want := "Bearer"
	if preferDPoP {
		want = "DPoP"
	}
	var other Challenge
	found := false
	for _, c := range ParseChallenges(h.Values("WWW-Authenticate")) {
		if strings.EqualFold(c.Scheme, want) {
			return c, true
		}
		if !found && (strings.EqualFold(c.Scheme, "Bearer") || strings.EqualFold(c.Scheme, "DPoP")) {
			other, found = c, true
		}
	}
	return other, found
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
		for len(c.Params) < maxChallengeParams {
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
