// Package tokenwire holds the wire details of the OAuth client's token
// requests: HTTP Basic client credentials, expires_in and the error code
// of an answer, and what keeps secrets and a server's stray bytes out of
// the errors built from answers (the request's secrets redacted, server
// text clipped and stripped of control characters).
package tokenwire

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
)

// ErrorCode is the OAuth error code of an error answer ("" when none).
func ErrorCode(data []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Error
}

// ExpiresIn reads expires_in, a number (some servers send a string).
func ExpiresIn(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var n json.Number
	s := strings.Trim(string(raw), `"`)
	n = json.Number(s)
	v, err := n.Int64()
	if err != nil {
		f, ferr := n.Float64()
		if ferr != nil {
			return 0, false
		}
		v = int64(f)
	}
	if v <= 0 || v > 10*365*24*3600 {
		return 0, false
	}
	return v, true
}

// publicParams are the token request parameters that are no secret; every
// other value a request sends is one (SentSecrets).
var publicParams = map[string]bool{
	"grant_type": true, "resource": true, "redirect_uri": true, "scope": true, "client_id": true,
	"client_assertion_type": true, "requested_token_type": true, "subject_token_type": true, "audience": true,
}

// SentSecrets are the values of a token request that an error built from
// its answer must not repeat: every form value but publicParams', and
// extra (the client secret, HTTP Basic credentials).
func SentSecrets(form url.Values, extra ...string) []string {
	var out []string
	for k, vs := range form {
		if !publicParams[k] {
			out = append(out, vs...)
		}
	}
	return append(out, extra...)
}

// Redact replaces in s every one of secrets, as sent and form-encoded.
func Redact(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) < minRedacted {
			continue
		}
		s = strings.ReplaceAll(s, v, "[redacted]")
		if q := url.QueryEscape(v); q != v {
			s = strings.ReplaceAll(s, q, "[redacted]")
		}
	}
	return s
}

// minRedacted: shorter values are not searched for (a one-letter secret
// would blank the message, and is no secret worth the name).
const minRedacted = 4

// BasicCredentials are the HTTP Basic credentials of a client (RFC 6749
// §2.3.1: each part form-encoded first).
func BasicCredentials(id, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(secret)))
}

// Clip cuts server text to n bytes and drops control characters.
func Clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}
