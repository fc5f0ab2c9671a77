package engine

import "testing"

// TestStartedArg: how a claim call sends a part's started record: the
// name as it is, escaped, or the whole member when the text does not open
// with the name.
func TestStartedArg(t *testing.T) {
	for _, c := range []struct{ name, text, m, rest string }{
		{"a", `{"job":"a","at":1}`, "", `"at":1}`},
		{`q"uote`, `{"job":"q\"uote","at":1}`, `"q\"uote"`, `"at":1}`},
		{`back\slash`, `{"job":"back\\slash","at":1}`, `"back\\slash"`, `"at":1}`},
		{`q"uote`, `{"job":"q"uote","at":1}`, `s|{"job":"q"uote","at":1}`, ""}, // not JSON
		{"<b>", `{"job":"\u003cb\u003e","at":1}`, `"\u003cb\u003e"`, `"at":1}`},
		{"a", `{"job":"b","at":1}`, `s|{"job":"b","at":1}`, ""},
		{"a,b", `{"job":"a,b","at":1}`, `s|{"job":"a,b","at":1}`, ""},
		{"a", `{"at":1,"job":"a"}`, `s|{"at":1,"job":"a"}`, ""},
		{"a", "", "-", ""},
	} {
		if m, rest := startedArg(c.name, c.text); m != c.m || rest != c.rest {
			t.Errorf("startedArg(%q, %q) = %q, %q; want %q, %q", c.name, c.text, m, rest, c.m, c.rest)
		}
	}
}
