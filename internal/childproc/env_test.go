package childproc

import (
	"slices"
	"strings"
	"testing"
)

func TestEnv(t *testing.T) {
	host := map[string]string{"PATH": "/bin", "HOME": "/home/u", "OPENAI_API_KEY": "sk-secret", "LANG": "C", "SYSTEMROOT": `C:\Windows`, "TZ": ""}
	getenv := func(k string) string { return host[k] }
	tests := []struct {
		name       string
		configured map[string]string
		want       []string
	}{
		{"basics only", nil, []string{"PATH=/bin", "HOME=/home/u", "LANG=C", `SYSTEMROOT=C:\Windows`}},
		{"configured wins and is sorted", map[string]string{"HOME": "/srv", "FOO": "bar", "API": "x"},
			[]string{"PATH=/bin", "LANG=C", `SYSTEMROOT=C:\Windows`, "API=x", "FOO=bar", "HOME=/srv"}},
		{"configured may set an empty basic", map[string]string{"PATH": ""}, []string{"HOME=/home/u", "LANG=C", `SYSTEMROOT=C:\Windows`, "PATH="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Env(getenv, tt.configured)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Env = %q, want %q", got, tt.want)
			}
			if strings.Contains(strings.Join(got, "\n"), "sk-secret") {
				t.Fatalf("the host's secret leaked: %q", got)
			}
		})
	}
}
