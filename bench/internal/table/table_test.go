package table

import (
	"fmt"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	var b strings.Builder
	tw := New(&b)
	fmt.Fprintln(tw, "name\tvalue\tnote")
	fmt.Fprintln(tw, "a\t1\t")
	fmt.Fprintln(tw, strings.Repeat("\t", 2))
	fmt.Fprintln(tw, "longer\t22\tx")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "name    value  note\n" +
		"a       1\n" +
		"\n" +
		"longer  22     x\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
