package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestHelp checks that -h prints the usage and ends the program with
// status 0 and no error message, while a bad flag is still an error.
func TestHelp(t *testing.T) {
	parse := func(args []string, stderr io.Writer) (int, error) {
		fs := NewFlagSet("prog", stderr)
		n := fs.Int("n", 1, "a number")
		return *n, Parse(fs, args)
	}
	run := func(context.Context, int, Env, io.Writer, io.Writer) error {
		t.Fatal("run called")
		return nil
	}
	for _, tc := range []struct {
		args      []string
		status    int
		usage     bool
		errPrefix string
	}{
		{args: []string{"-h"}, status: 0, usage: true},
		{args: []string{"-help"}, status: 0, usage: true},
		{args: []string{"-x"}, status: 1, usage: true, errPrefix: "prog: flag provided but not defined"},
		{args: []string{"extra"}, status: 1, errPrefix: "prog: unexpected arguments"},
	} {
		var stderr strings.Builder
		err := start(context.Background(), tc.args, io.Discard, &stderr, parse, run)
		usage := stderr.String()
		var msg strings.Builder
		if got := exitStatus("prog", err, &msg); got != tc.status {
			t.Errorf("%q: status %d, want %d (err %v)", tc.args, got, tc.status, err)
		}
		if got := strings.Contains(usage, "Usage of prog"); got != tc.usage {
			t.Errorf("%q: usage printed %v, want %v: %q", tc.args, got, tc.usage, usage)
		}
		if !strings.HasPrefix(msg.String(), tc.errPrefix) || (tc.errPrefix == "") != (msg.Len() == 0) {
			t.Errorf("%q: message %q, want it to start with %q", tc.args, msg.String(), tc.errPrefix)
		}
	}
	if exitStatus("prog", nil, io.Discard) != 0 || exitStatus("prog", errors.Join(errors.New("x"), flag.ErrHelp), io.Discard) != 0 {
		t.Error("nil or a wrapped ErrHelp: not status 0")
	}
}
