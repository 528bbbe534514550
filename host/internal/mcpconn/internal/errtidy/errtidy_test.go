package errtidy

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTidyError(t *testing.T) {
	inner := fmt.Errorf("failed to send request: %w", fmt.Errorf("failed to send request: %w", io.ErrUnexpectedEOF))
	err := Tidy(fmt.Errorf("initialize: transport error: %w", inner))
	if got, want := err.Error(), "initialize: transport error: failed to send request: unexpected EOF"; got != want {
		t.Errorf("Tidy = %q, want %q", got, want)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the tidied error lost its chain")
	}
	plain := errors.New("a: b: a")
	if Tidy(plain) != plain {
		t.Error("an error without a repeated segment was rewrapped")
	}
}

// TestTidyErrorOneLine: a server's HTML error page, line breaks and an
// endless body do not reach the user's terminal whole.
func TestTidyErrorOneLine(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"html page", "initialize: transport error: request failed with status 501: <!DOCTYPE HTML>\n<html lang=\"en\">\n<body><h1>Error response</h1></body></html>\n",
			"initialize: transport error: request failed with status 501 (an HTML page, left out)"},
		{"line breaks", "start transport: unexpected status code: 405\n\nMethod   Not Allowed\n", "start transport: unexpected status code: 405 Method Not Allowed"},
		{"long", "status 500: " + strings.Repeat("é", 400), "status 500: " + strings.Repeat("é", (MaxText-len("status 500: "))/2) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Tidy(errors.New(tc.in))
			if got := err.Error(); got != tc.want {
				t.Errorf("Tidy =\n%q, want\n%q", got, tc.want)
			}
			if !utf8.ValidString(err.Error()) {
				t.Error("cut inside a character")
			}
		})
	}
}
