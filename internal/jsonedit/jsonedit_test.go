package jsonedit

import (
	"encoding/json"
	"testing"
)

func TestRemoveMember(t *testing.T) {
	for _, tc := range []struct{ doc, name, want string }{
		{`{"a": 1, "b": 2, "c": 3}`, "a", `{ "b": 2, "c": 3}`},
		{`{"a": 1, "b": 2, "c": 3}`, "b", `{"a": 1, "c": 3}`},
		{`{"a": 1, "b": 2, "c": 3}`, "c", `{"a": 1, "b": 2}`},
		{"{\n  \"a\": {\"x\": [1, \",\"]}\n}", "a", "{\n  \n}"},
		{`{"a" : "," , "b": 2}`, "a", `{ "b": 2}`},
	} {
		o, err := Members([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		var e Edit
		if !e.RemoveMember([]byte(tc.doc), o, tc.name) {
			t.Fatalf("%s: no member %s", tc.doc, tc.name)
		}
		out, err := e.Apply([]byte(tc.doc))
		if err != nil || string(out) != tc.want {
			t.Errorf("remove %s from %s = %q, %v; want %q", tc.name, tc.doc, out, err, tc.want)
		}
	}
}

// Members reads any object without panicking, with every span inside the
// document; removing any member and adding one leaves valid JSON.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a": {"b": [1, 2]}, "c": "x,y"}`, "{\n  \"a\" : null ,\n \"b\":true}\n", `[1]`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		data := []byte(doc)
		o, err := Members(data)
		if err != nil {
			return
		}
		for _, name := range o.Order {
			span := o.Members[name]
			if span[0] < 0 || span[1] > len(data) || span[0] > span[1] || o.Starts[name] > span[0] {
				t.Fatalf("span %v of %q outside %q", span, name, doc)
			}
			var e Edit
			e.RemoveMember(data, o, name)
			out, err := e.Apply(data)
			if err != nil || !json.Valid(out) {
				t.Fatalf("removing %q from %q gave %q (%v)", name, doc, out, err)
			}
		}
		var e Edit
		e.AddMembers(data, o, "  ", Member{Name: "new", Value: map[string]string{"k": "<&>"}})
		out, err := e.Apply(data)
		if err != nil || !json.Valid(out) {
			t.Fatalf("adding to %q gave %q (%v)", doc, out, err)
		}
	})
}
