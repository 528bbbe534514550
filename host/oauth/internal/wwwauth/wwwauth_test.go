package wwwauth

import "testing"

func TestParseBounded(t *testing.T) {
	long := ""
	for range 100 {
		long += "Bearer a=1, "
	}
	if n := len(Parse([]string{long})); n != MaxChallenges {
		t.Fatalf("got %d challenges, want the bound %d", n, MaxChallenges)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`Bearer realm="mcp", resource_metadata="https://ex.com/x", scope="a b"`,
		`Basic realm="x", Bearer error="insufficient_scope"`,
		`Negotiate abc==`, `Bearer scope="a \"q\""`, `,,,=`, `Bearer scope="`, "Bearer a=\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs := Parse([]string{s})
		if len(cs) > MaxChallenges {
			t.Fatalf("%d challenges", len(cs))
		}
		for _, c := range cs {
			if c.Scheme == "" || len(c.Params) > MaxParams {
				t.Fatalf("bad challenge %+v", c)
			}
		}
	})
}
