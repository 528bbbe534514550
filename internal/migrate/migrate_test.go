package migrate

import (
	"errors"
	"testing"
	"testing/fstest"
)

func TestLoadAndPending(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_more.sql":  {Data: []byte("B")},
		"m/0001_first.sql": {Data: []byte("A")},
		"m/README":         {Data: []byte("not a migration")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].SQL != "A" || ms[1].Version != 2 {
		t.Fatalf("Load = %+v", ms)
	}
	tests := []struct {
		have   int
		want   int
		tooNew bool
	}{{0, 2, false}, {1, 1, false}, {2, 0, false}, {3, 0, true}}
	for _, tc := range tests {
		p, err := Pending(ms, tc.have)
		if errors.Is(err, ErrSchemaTooNew) != tc.tooNew || len(p) != tc.want {
			t.Errorf("Pending(have %d) = %d, %v; want %d, too new %v", tc.have, len(p), err, tc.want, tc.tooNew)
		}
	}
}

func TestLoadRejectsBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"no number": {"m/first.sql": {}},
		"zero":      {"m/0000_a.sql": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load accepted it", name)
		}
	}
}
