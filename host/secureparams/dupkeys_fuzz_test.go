package secureparams

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
)

// objectOfKeys is an object of n distinct members, then extra raw members.
func objectOfKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(extra)
	b.WriteString("}")
	return b.String()
}

// FuzzRepeatedKeys checks the duplicate-member scan (names kept on one
// stack shared by nested objects, a map for large objects) against a
// reference built on encoding/json's tokens: the same verdict, and for a
// repeated name the same name and object.
func FuzzRepeatedKeys(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"a":2}`, `{"a":{"a":1},"b":{"a":1}}`, `{"a":{"b":1},"b":2,"a":3}`,
		`[{"a":1},{"a":1,"a":2}]`, `{"\u0061":1,"a":2}`, `{"a~/b":{"x":1,"x":2}}`,
		objectOfKeys(16, `"k0":0`), objectOfKeys(17, `"k3":0`), objectOfKeys(17, `"k17":0`),
		objectOfKeys(20, `"n":`+objectOfKeys(18, `"k1":1`)), objectOfKeys(20, `"n":{"k1":1},"o":{"k1":1}`),
		objectOfKeys(15, `"n":{"a":1},"m":[{"b":1,"c":2}],"k0":0`), `{"x":[1,{"y":{"z":1,"z":2}}]}`,
		string(realisticTool),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		wantKey, wantAt, repeated := referenceRepeatedKey(t, doc)
		p := checkDuplicateKeys(json.RawMessage(doc), "doc", knownValid)
		switch {
		case !repeated && p != nil:
			t.Fatalf("%s: reported %q, encoding/json sees no repeated name", doc, p.reason)
		case repeated && p == nil:
			t.Fatalf("%s: %q repeated at %s not found", doc, wantKey, wantAt)
		case repeated:
			want := fmt.Sprintf("doc repeats the key %q in the object at %s", wantKey, schemajson.At(wantAt))
			if p.reason != want {
				t.Fatalf("%s:\n got %s\nwant %s", doc, p.reason, want)
			}
		}
	})
}

// referenceRepeatedKey finds the first repeated member name in document
// order, and the pointer of its object, with encoding/json's tokens.
func referenceRepeatedKey(t *testing.T, doc string) (string, string, bool) {
	type level struct {
		object bool
		seen   map[string]bool
		index  int
		key    string // the member being read (objects)
		member bool   // a member's name was read, its value not yet
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber()
	var stack []*level
	path := func() string {
		var segs []string
		for _, l := range stack[:len(stack)-1] {
			if l.object {
				segs = append(segs, l.key)
			} else {
				segs = append(segs, strconv.Itoa(l.index))
			}
		}
		return pointer(segs)
	}
	expectKey := func() bool { return len(stack) > 0 && stack[len(stack)-1].object && !stack[len(stack)-1].member }
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.member = false
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", "", false
		}
		if err != nil {
			t.Fatalf("reference decoder: %v", err)
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				stack = append(stack, &level{object: d == '{', seen: map[string]bool{}})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		}
		if expectKey() {
			top := stack[len(stack)-1]
			key := tok.(string)
			if top.seen[key] {
				return key, path(), true
			}
			top.seen[key], top.key, top.member = true, key, true
			continue
		}
		valueDone()
	}
}
