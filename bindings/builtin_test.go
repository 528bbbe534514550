package bindings

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLiteralString(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		want    string
		wantErr bool
	}{
		{"string", "retail-prod", "retail-prod", false},
		{"empty string", "", "", false},
		{"int", 42, "42", false},
		{"int64", int64(-7), "-7", false},
		{"float integral", float64(1000000), "1000000", false},
		{"float", 1.5, "1.5", false},
		{"bool", true, "true", false},
		{"json number", json.Number("12.50"), "12.50", false},
		{"map", map[string]any{"b": 1, "a": "<x>"}, `{"a":"<x>","b":1}`, false},
		{"list", []any{"a", 2}, `["a",2]`, false},
		{"nil", nil, "", true},
		{"bytes", []byte("x"), "", true},
		{"yaml.v2 style map", map[any]any{"k": "v"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LiteralString(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvSource(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_REGION", "eu-west-9")
	t.Setenv("AGENTHOST_TEST_EMPTY", "")
	tests := []struct {
		ref     string
		want    string
		wantErr bool
	}{
		{"AGENTHOST_TEST_REGION", "eu-west-9", false},
		{"AGENTHOST_TEST_EMPTY", "", true},
		{"AGENTHOST_TEST_UNSET_XYZ", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := EnvSource{}.Resolve(t.Context(), Request{Ref: tt.ref})
			if tt.wantErr {
				if !errors.Is(err, ErrNotSet) || !strings.Contains(err.Error(), tt.ref) {
					t.Fatalf("err = %v, want ErrNotSet naming %s", err, tt.ref)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Value != tt.want || got.Sensitivity != Secret {
				t.Errorf("got %+v, want %q secret", got, tt.want)
			}
		})
	}
}

func TestEnvSourceCustomLookup(t *testing.T) {
	src := EnvSource{LookupEnv: func(name string) (string, bool) { return "v-" + name, true }}
	got, err := src.Resolve(t.Context(), Request{Ref: "X"})
	if err != nil || got.Value != "v-X" {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestFileSource(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token.txt")
	write := func(content string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	src := NewFileSource()
	resolve := func() (Resolved, error) { return src.Resolve(t.Context(), Request{Ref: path}) }
	base := time.Now().Add(-time.Hour).Truncate(time.Second)

	write("  tok-one\n", base)
	if got, err := resolve(); err != nil || got.Value != "tok-one" || got.Sensitivity != Secret {
		t.Fatalf("first read = %+v, %v", got, err)
	}
	// Different size, same mtime: re-read.
	write("tok-three-longer\n", base)
	if got, _ := resolve(); got.Value != "tok-three-longer" {
		t.Fatalf("after size change got %q", got.Value)
	}
	// Same size, different mtime: re-read.
	write("tok-four!\n", base.Add(time.Second))
	if got, _ := resolve(); got.Value != "tok-four!" {
		t.Fatalf("after mtime change got %q", got.Value)
	}
	// Atomic replace (new inode) with identical size and mtime: re-read.
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte("tok-five!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, base.Add(time.Second), base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got, _ := resolve(); got.Value != "tok-five!" {
		t.Fatalf("after replace got %q", got.Value)
	}

	write(" \n\t", base.Add(2*time.Second))
	if _, err := resolve(); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty file: err = %v", err)
	}

	missing := filepath.Join(dir, "missing.txt")
	_, err := src.Resolve(t.Context(), Request{Ref: missing})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: err = %v, want ErrNotExist naming the path", err)
	}

	if _, err := src.Resolve(t.Context(), Request{Ref: dir}); err == nil {
		t.Fatal("directory: want error")
	}
}

func TestSessionSource(t *testing.T) {
	ctx := ContextWithSessionValues(t.Context(), MapValues{"instance": "db-7", "blank": ""})
	tests := []struct {
		name    string
		ctx     context.Context
		ref     string
		want    string
		wantErr bool
	}{
		{"present", ctx, "instance", "db-7", false},
		{"absent", ctx, "region", "", true},
		{"empty counts as absent", ctx, "blank", "", true},
		{"no session values", t.Context(), "instance", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SessionSource{}.Resolve(tt.ctx, Request{Ref: tt.ref})
			if tt.wantErr {
				if !errors.Is(err, ErrNotSet) || !strings.Contains(err.Error(), tt.ref) {
					t.Fatalf("err = %v, want ErrNotSet naming %q", err, tt.ref)
				}
				return
			}
			if err != nil || got.Value != tt.want || got.Sensitivity != Secret {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
	if _, ok := SessionValuesFrom(ContextWithSessionValues(t.Context(), nil)); ok {
		t.Error("nil SessionValues reported as present")
	}
}

func TestParseBinds(t *testing.T) {
	const canary = "canary-Zq81"
	tests := []struct {
		name    string
		args    []string
		want    MapValues
		wantErr bool
	}{
		{"ok", []string{"instance=db-7", "token=a=b"}, MapValues{"instance": "db-7", "token": "a=b"}, false},
		{"later wins", []string{"a=1", "a=2"}, MapValues{"a": "2"}, false},
		{"none", nil, MapValues{}, false},
		{"no equals", []string{canary}, nil, true},
		{"no name", []string{"=" + canary}, nil, true},
		{"empty value", []string{"name="}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBinds(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				if strings.Contains(err.Error(), canary) {
					t.Fatalf("error echoes the value: %v", err)
				}
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestSensitivityText(t *testing.T) {
	for _, s := range []Sensitivity{Public, Internal, Secret} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Sensitivity
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%v round-tripped via %s to %v, %v", s, b, back, err)
		}
	}
	if _, err := ParseSensitivity("SECRET"); err == nil {
		t.Error("ParseSensitivity accepted wrong case")
	}
	if _, err := json.Marshal(Sensitivity(9)); err == nil {
		t.Error("invalid sensitivity marshalled")
	}
}
