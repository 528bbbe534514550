package config

import (
	"strings"
	"testing"
)

func TestLoadReadsAFileOfTheMaximumSize(t *testing.T) {
	dir := t.TempDir()
	body := "llm: {model: m}\n"
	path := writeFile(t, dir, "max.yaml", body+"#"+strings.Repeat("x", MaxFileBytes-len(body)-2)+"\n")
	if _, err := Load(path); err != nil {
		t.Fatalf("Load of a %d-byte file: %v", MaxFileBytes, err)
	}
}
