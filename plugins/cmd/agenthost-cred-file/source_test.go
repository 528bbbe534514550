package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins/plugintest"
	"github.com/agenthost/agenthost/plugins/sdk"
)

const canary = "CANARY-credfile-93e1"

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConformance(t *testing.T) {
	path := writeFile(t, "creds.yaml", "orders/token: "+canary+"\n")
	plugintest.Run(t, newFileSource(), plugintest.Options{
		Config: map[string]any{"path": path},
		Known:  bindings.Request{Ref: "orders/token"},
		Want:   canary,
	})
}

func TestParse(t *testing.T) {
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		file    string
		want    map[string]entry
		wantErr string
	}{
		{name: "yaml string and object",
			file: "a: one\nb:\n  value: two\n  expiration: 2030-01-01T00:00:00Z\n  tenants:\n    acme: three\n",
			want: map[string]entry{
				"a": {Value: "one", HasValue: true},
				"b": {Value: "two", HasValue: true, Expiration: exp, Tenants: map[string]string{"acme": "three"}},
			}},
		{name: "yaml keeps scalars verbatim",
			file: "pin: 0123\nflag: true\n",
			want: map[string]entry{"pin": {Value: "0123", HasValue: true}, "flag": {Value: "true", HasValue: true}}},
		{name: "yaml tenants only",
			file: "a:\n  tenants:\n    acme: x\n",
			want: map[string]entry{"a": {Tenants: map[string]string{"acme": "x"}}}},
		{name: "json",
			file: `{"a": "one", "b": {"value": "two", "expiration": "2030-01-01T00:00:00Z", "tenants": {"acme": "three"}}}`,
			want: map[string]entry{
				"a": {Value: "one", HasValue: true},
				"b": {Value: "two", HasValue: true, Expiration: exp, Tenants: map[string]string{"acme": "three"}},
			}},
		{name: "empty file", file: "", want: map[string]entry{}},
		{name: "yaml unknown key", file: "a:\n  valeu: " + canary + "\n", wantErr: `ref "a" (line 2): unknown key "valeu"`},
		{name: "yaml bad expiration", file: "a:\n  value: x\n  expiration: " + canary + "\n", wantErr: "not an RFC 3339 time"},
		{name: "yaml neither value nor tenants", file: "a:\n  expiration: 2030-01-01T00:00:00Z\n", wantErr: `ref "a" has neither a value nor tenant values`},
		{name: "yaml null value", file: "a:\n", wantErr: "value is empty"},
		{name: "yaml list root", file: "- " + canary + "\n", wantErr: "must be a mapping"},
		{name: "yaml duplicate ref", file: "a: x\na: y\n", wantErr: `line 2: ref "a" appears twice`},
		{name: "yaml tenant not a string", file: "a:\n  tenants:\n    acme: [" + canary + "]\n", wantErr: `tenant "acme": value must be a string`},
		{name: "json truncated", file: `{"a": "` + canary, wantErr: "invalid JSON (the file ends in the middle"},
		{name: "json syntax", file: `{"a": "x", ` + canary + `}`, wantErr: "invalid JSON (syntax error at byte"},
		{name: "json unknown field", file: `{"a": {"valeu": "` + canary + `"}}`, wantErr: `ref "a": json: unknown field "valeu"`},
		{name: "json wrong type", file: `{"a": {"value": 5}}`, wantErr: `ref "a": value must be a string`},
		{name: "json number entry", file: `{"a": 5}`, wantErr: "entry must be a string or an object"},
		{name: "json trailing data", file: `{"a": "x"} {"b": "y"}`, wantErr: "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse([]byte(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse error = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), canary) {
					t.Errorf("error quotes a value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("parse = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

func TestTenantSelection(t *testing.T) {
	path := writeFile(t, "creds.yaml", `
shared:
  value: default
  tenants:
    acme: acme-value
tenants-only:
  tenants:
    acme: only-acme
`)
	src := plugintest.NewSource(t, newFileSource(), map[string]any{"path": path})
	tests := []struct {
		subject, ref, want string
		wantUnknown        bool
	}{
		{"acme", "shared", "acme-value", false},
		{"globex", "shared", "default", false},
		{"", "shared", "default", false},
		{"acme", "tenants-only", "only-acme", false},
		{"globex", "tenants-only", "", true},
		{"acme", "missing", "", true},
	}
	for _, tt := range tests {
		res, err := src.Resolve(context.Background(), bindings.Request{Scope: bindings.Scope{Subject: tt.subject}, Ref: tt.ref})
		if tt.wantUnknown {
			if !errors.Is(err, sdk.ErrUnknownRef) {
				t.Errorf("%s/%s: err = %v, want ErrUnknownRef", tt.subject, tt.ref, err)
			}
			continue
		}
		if err != nil || res.Value != tt.want || res.Sensitivity != bindings.Secret {
			t.Errorf("%s/%s = %+v, %v; want %q (secret)", tt.subject, tt.ref, res, err, tt.want)
		}
	}
}

func TestTenantsConcurrentWithReloads(t *testing.T) {
	path := writeFile(t, "creds.yaml", "k:\n  tenants:\n    a: a-1\n    b: b-1\n")
	src := plugintest.NewSource(t, newFileSource(), map[string]any{"path": path})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // rewrite the file (same tenants, new generation) while reading
		defer wg.Done()
		for i := 2; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			content := fmt.Sprintf("k:\n  tenants:\n    a: a-%d\n    b: b-%d\n", i, i)
			tmp := path + ".tmp"
			_ = os.WriteFile(tmp, []byte(content), 0o600)
			_ = os.Rename(tmp, path)
			time.Sleep(time.Millisecond)
		}
	}()
	errs := make(chan error, 200)
	var readers sync.WaitGroup
	for i := range 200 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			tenant := []string{"a", "b"}[i%2]
			res, err := src.Resolve(context.Background(), bindings.Request{Scope: bindings.Scope{Subject: tenant}, Ref: "k"})
			if err != nil {
				errs <- err
				return
			}
			if !strings.HasPrefix(res.Value, tenant+"-") {
				errs <- fmt.Errorf("tenant %s got another tenant's value", tenant)
			}
		}()
	}
	readers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConfigureErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, "bad.yaml", "a: [unclosed\n")
	tests := []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "nope.yaml"), "no such file"},
		{"directory", dir, "not a regular file"},
		{"invalid file", bad, "invalid YAML"},
	}
	for _, tt := range tests {
		err := newFileSource().Configure(context.Background(), map[string]any{"path": tt.path})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Configure = %v, want %q", tt.name, err, tt.want)
		}
	}
}
