package httpguard

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestDiscoverIsModern(t *testing.T) {
	for _, tc := range []struct {
		result string
		want   bool
	}{
		{`{"supportedVersions":["2026-07-28"],"capabilities":{}}`, true},
		{`{"supportedVersions":["2025-11-25","2026-07-28"]}`, true},
		{`{}`, false},
		{`null`, false},
		{`{"supportedVersions":[]}`, false},
		{`{"supportedVersions":["2025-11-25"]}`, false},
		{`{"supportedVersions":["2099-01-01"]}`, false}, // modern, but not one the SDK speaks
		{`{"supportedVersions":"2026-07-28"}`, false},
		{`[1,2]`, false},
	} {
		if got := DiscoverIsModern(json.RawMessage(tc.result)); got != tc.want {
			t.Errorf("DiscoverIsModern(%s) = %v, want %v", tc.result, got, tc.want)
		}
	}
}

func FuzzDiscoverIsModern(f *testing.F) {
	for _, seed := range []string{`{}`, `{"supportedVersions":["2026-07-28"]}`, `{"supportedVersions":[1]}`, `"x"`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = DiscoverIsModern(raw) // never panics
	})
}

func TestCheckDiscoverAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		replaced   bool
	}{
		{"empty result", `{"jsonrpc":"2.0","id":1,"result":{}}`, true},
		{"discovery", `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`, false},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, false},
		{"not JSON", `<html>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(tc.body))}
			checkDiscoverAnswer(resp, 1<<20)
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.replaced {
				if string(got) != tc.body {
					t.Errorf("body %s, want it unchanged", got)
				}
				return
			}
			var msg struct {
				ID    int `json:"id"`
				Error struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(got, &msg); err != nil || msg.ID != 1 || msg.Error.Code != -32601 {
				t.Errorf("body %s, want a method-not-found error for id 1", got)
			}
		})
	}
	t.Run("too large", func(t *testing.T) {
		resp := &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`))}
		checkDiscoverAnswer(resp, 10)
		if _, err := io.ReadAll(resp.Body); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("read %v, want the message-too-large error", err)
		}
	})
}

func TestListeningRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		header http.Header
		status int
		want   int
	}{
		{"GET 400", http.MethodGet, nil, 400, 405},
		{"GET 406", http.MethodGet, nil, 406, 405},
		{"GET 404 without a session", http.MethodGet, nil, 404, 405},
		{"GET 404 on a session", http.MethodGet, http.Header{"Mcp-Session-Id": {"s"}}, 404, 404},
		{"GET 401", http.MethodGet, nil, 401, 401},
		{"GET 429", http.MethodGet, nil, 429, 429},
		{"GET 500", http.MethodGet, nil, 500, 500},
		{"GET 200", http.MethodGet, nil, 200, 200},
		{"resuming GET 400", http.MethodGet, http.Header{"Last-Event-Id": {"e-1"}}, 400, 400},
		{"POST 400", http.MethodPost, nil, 400, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://server.invalid/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header[http.CanonicalHeaderKey(k)] = v
			}
			resp := &http.Response{StatusCode: tc.status}
			listeningRefused(req, resp)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestQuietListening(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		logger := slog.New(QuietListening{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})}).With("server", "db")
		logger.Error(listeningNotOffered)
		logger.Error("failed to send response to server")
		out := buf.String()
		if strings.Contains(out, "level=ERROR msg=\""+listeningNotOffered) {
			t.Errorf("level %s: the refused stream is logged as an error:\n%s", level, out)
		}
		if got := strings.Contains(out, "level=DEBUG msg=\""+listeningNotOffered); got != (level == slog.LevelDebug) {
			t.Errorf("level %s: debug line present %v:\n%s", level, got, out)
		}
		if !strings.Contains(out, "level=ERROR msg=\"failed to send response to server\" server=db") {
			t.Errorf("level %s: other errors must stay errors:\n%s", level, out)
		}
	}
}
