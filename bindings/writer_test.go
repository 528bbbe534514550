package bindings

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestRedactingWriterSplitWrites(t *testing.T) {
	r := NewRedactor()
	r.Add(canary)
	line := "token=" + canary + " end\nnext line " + canary + "\n"
	want := "token=" + RedactedText + " end\nnext line " + RedactedText + "\n"
	// Split the output into two writes at every position.
	for cut := 0; cut <= len(line); cut++ {
		var out bytes.Buffer
		w := RedactingWriter(&out, r)
		for _, part := range []string{line[:cut], line[cut:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("cut %d: got %q", cut, out.String())
		}
	}
}

func TestRedactingWriterByteByByte(t *testing.T) {
	r := NewRedactor()
	pem := "-----BEGIN KEY-----\nMIIBOgIBAAJBAK\n-----END KEY-----"
	r.Add(pem)
	r.Add(canary)
	text := "key:\n" + pem + "\ntail " + canary // no final newline: Close flushes
	var out bytes.Buffer
	w := RedactingWriter(&out, r)
	for i := range len(text) {
		if _, err := w.Write([]byte{text[i]}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "MIIBOgIBAAJBAK") {
			t.Fatalf("part of the multi-line value was passed on after %d bytes: %q", i, out.String())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "key:\n" + RedactedText + "\ntail " + RedactedText; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestRedactingWriterPassesLinesPromptly(t *testing.T) {
	r := NewRedactor()
	r.Add(canary)
	var out bytes.Buffer
	w := RedactingWriter(&out, r)
	w.Write([]byte("first\nsecond part"))
	if out.String() != "first\n" {
		t.Fatalf("after one write: %q", out.String())
	}
	w.Write([]byte(" done\n"))
	if out.String() != "first\nsecond part done\n" {
		t.Fatalf("after two writes: %q", out.String())
	}
}

func TestRedactingWriterLongLine(t *testing.T) {
	r := NewRedactor()
	r.Add(canary)
	// A value straddling the point where a long line is cut.
	for _, offset := range []int{0, 1, len(canary) / 2, len(canary) - 1} {
		var out bytes.Buffer
		w := RedactingWriter(&out, r)
		prefix := strings.Repeat("a", maxLineBuffer+len(canary)-1-offset)
		w.Write([]byte(prefix))
		w.Write([]byte(canary + strings.Repeat("b", 40)))
		if out.Len() == 0 {
			t.Fatal("long line was not passed on before Close")
		}
		w.Close()
		if strings.Contains(out.String(), canary[:len(canary)/2]) && !strings.Contains(out.String(), RedactedText) {
			t.Fatalf("offset %d: value cut through", offset)
		}
		if want := prefix + RedactedText + strings.Repeat("b", 40); out.String() != want {
			t.Fatalf("offset %d: output differs (len %d, want %d)", offset, out.Len(), len(want))
		}
	}
}

func TestRedactingWriterClosed(t *testing.T) {
	var out bytes.Buffer
	w := RedactingWriter(&out, NewRedactor())
	w.Write([]byte("partial"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "partial" {
		t.Fatalf("Close did not flush: %q", out.String())
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("write after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

type failingWriter struct{}

var errDisk = errors.New("disk full")

func (failingWriter) Write(p []byte) (int, error) { return 0, errDisk }

func TestRedactingWriterPropagatesErrors(t *testing.T) {
	w := RedactingWriter(failingWriter{}, NewRedactor())
	if _, err := w.Write([]byte("line\n")); !errors.Is(err, errDisk) {
		t.Fatalf("err = %v", err)
	}
}

func TestRedactingWriterConcurrent(t *testing.T) {
	r := NewRedactor()
	r.Add(canary)
	var out bytes.Buffer
	w := RedactingWriter(&out, r)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 50 {
				w.Write([]byte("t=" + canary + "\n"))
			}
		})
	}
	wg.Wait()
	w.Close()
	if strings.Contains(out.String(), canary) || strings.Count(out.String(), RedactedText) != 1000 {
		t.Fatal("concurrent writes leaked or lost lines")
	}
}

// TestStreamRedactor: a value split over pieces at every position, in a
// plain and an escaped spelling, never comes out; the text around it
// comes out whole and in order.
func TestStreamRedactor(t *testing.T) {
	const secret = "tok-SPLIT-ä-9876"
	r := NewRedactor()
	r.Add(secret)
	for _, text := range []string{
		"before " + secret + " after, and more text so that some is passed on early",
		`as json: "tok-SPLIT-\u00e4-9876" end`,
		"ünïcödé ✓ " + secret,
	} {
		for split := 0; split <= len(text); split++ {
			for _, size := range []int{1, 3, 7} {
				sr := r.NewStream()
				var out strings.Builder
				pieces := []string{text[:split]}
				for rest := text[split:]; rest != ""; {
					n := min(size, len(rest))
					pieces = append(pieces, rest[:n])
					rest = rest[n:]
				}
				for _, p := range pieces {
					got := sr.Write(p)
					if !utf8.ValidString(got) {
						t.Fatalf("a piece cuts a character: %q", got)
					}
					out.WriteString(got)
				}
				out.WriteString(sr.Flush())
				if got, want := out.String(), r.Redact(text); got != want {
					t.Fatalf("split at %d by %d: got %q, want %q", split, size, got, want)
				}
			}
		}
	}
	// Nothing registered: everything passes at once.
	if got := NewRedactor().NewStream().Write("abc"); got != "abc" {
		t.Fatalf("with no values the stream held back %q", got)
	}
}
