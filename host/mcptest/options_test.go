package mcptest

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		check   func(t *testing.T, o Options)
		wantErr string // from ParseFlags or New
	}{
		{"defaults", nil, func(t *testing.T, o Options) {
			if !slices.Equal(o.Extensions, []string{SecureParamsExtension}) || !slices.Equal(o.Eras, []string{EraLegacy, EraModern}) ||
				o.Transport != "stdio" || o.UnknownToolCode != CodeMethodNotFound || o.ErrorStatus != ErrorStatusSEP {
				t.Errorf("%+v", o)
			}
		}, ""},
		{"repeated extensions replace the default", []string{"--extension", "a/b", "--extension", "c/d,e/f"}, func(t *testing.T, o Options) {
			if !slices.Equal(o.Extensions, []string{"a/b", "c/d", "e/f"}) {
				t.Errorf("extensions %v", o.Extensions)
			}
		}, ""},
		{"extension none", []string{"--extension", "none"}, func(t *testing.T, o Options) {
			srv, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := srv.capabilities()["extensions"]; ok {
				t.Errorf("advertised %v", srv.capabilities())
			}
		}, ""},
		{"everything", []string{"--transport", "http", "--addr", "127.0.0.1:9", "--eras", "legacy", "--page-size", "3",
			"--errors-http-200", "--unknown-tool-code", "-32602", "--die-after", "4", "--start-delay", "300ms",
			"--malformed-page", "2", "--malformed-kind", "no-name", "--name", "n", "--version", "v", "--stderr-noise"}, func(t *testing.T, o Options) {
			if o.Transport != "http" || o.Addr != "127.0.0.1:9" || !slices.Equal(o.Eras, []string{EraLegacy}) || o.PageSize != 3 ||
				o.ErrorStatus != ErrorStatus200 || o.UnknownToolCode != CodeInvalidParams || o.DieAfter != 4 ||
				o.StartDelay != 300*time.Millisecond || o.MalformedPage != 2 || o.MalformedKind != MalformedNoName ||
				o.Name != "n" || o.Version != "v" || !o.StderrNoise {
				t.Errorf("%+v", o)
			}
		}, ""},
		{"example tools", []string{"--example"}, func(t *testing.T, o Options) {
			srv, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var names []string
			for _, raw := range srv.currentTools().Visible(true, false) {
				var tool struct {
					Name   string `json:"name"`
					Secure struct {
						Required []string `json:"required"`
					} `json:"secureInputSchema"`
				}
				if err := json.Unmarshal(raw, &tool); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(tool.Secure.Required, []string{"token"}) {
					t.Errorf("example tool %s does not take the secure parameter token: %s", tool.Name, raw)
				}
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, []string{"whoami", "delete_item"}) {
				t.Errorf("example tools %v", names)
			}
		}, ""},
		{"example and a tools file", []string{"--example", "--tools", "t.json"}, nil, "exclusive"},
		{"unknown flag", []string{"--nope"}, nil, "flag provided but not defined"},
		{"stray argument", []string{"extra"}, nil, "unexpected arguments"},
		{"bad era", []string{"--eras", "future"}, nil, `unknown era "future"`},
		{"bad unknown-tool-code", []string{"--unknown-tool-code", "-32000"}, nil, "unknown-tool-code must be"},
		{"bad error status", []string{"--error-status", "teapot"}, nil, "error-status must be"},
		{"bad transport", []string{"--transport", "carrier-pigeon"}, nil, "transport must be"},
		{"missing tools file", []string{"--tools", "does-not-exist.json"}, nil, "reading tools file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseFlags(tc.args, io.Discard)
			if err == nil {
				var srv *Server
				srv, err = New(o)
				if srv != nil {
					_ = srv.Close()
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o.applyDefaults()
			tc.check(t, o)
		})
	}
}
