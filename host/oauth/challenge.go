package oauth

import (
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/host/oauth/internal/wwwauth"
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

// ParseChallenges parses the values of WWW-Authenticate headers into their
// challenges. It never fails: malformed parts are skipped, and parsing stops
// at a bounded number of challenges and parameters per challenge.
func ParseChallenges(values []string) []Challenge {
	var out []Challenge
	for _, c := range wwwauth.Parse(values) {
		out = append(out, Challenge(c))
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
