// Package table writes the tables of the benchmark reports: columns
// separated by tabs, aligned with two spaces between them, and lines
// without trailing blanks.
package table

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Writer collects the rows of one table, cells separated by tabs and rows
// ended by newlines, as written to a text/tabwriter.Writer, and writes the
// aligned table to its destination on Flush.
type Writer struct {
	dst io.Writer
	buf strings.Builder
	tw  *tabwriter.Writer
}

// New returns a Writer that writes its table to w.
func New(w io.Writer) *Writer {
	t := &Writer{dst: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// Write adds p to the table.
func (t *Writer) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush aligns the rows written so far and writes them, each without its
// trailing blanks.
func (t *Writer) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(t.buf.String()) {
		if _, err := fmt.Fprintln(t.dst, strings.TrimRight(line, " \n")); err != nil {
			return err
		}
	}
	t.buf.Reset()
	return nil
}
