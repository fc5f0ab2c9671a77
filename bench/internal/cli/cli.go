// Package cli is the start-up the benchmark programs under bench/cmd
// share: running under a context that SIGINT and SIGTERM cancel, so that
// the redis-servers a program started are killed on Ctrl-C too; parsing
// their flags (-h prints the usage and exits with status 0); and finding
// the redis-server binary and the machine their reports describe.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
	"github.com/redcron/redcron/bench/internal/redisnode"
)

// Env is what every benchmark finds before it runs.
type Env struct {
	// RedisBin is the redis-server binary to start the servers from.
	RedisBin string
	// Machine describes where the benchmark runs, with the version of
	// RedisBin, for the report's header.
	Machine machine.Machine
}

// Main is the main function of the program called name. It parses the
// command-line arguments with parse (usage and flag errors go to standard
// error), finds redis-server and describes the machine, then calls run,
// with standard output for the report and standard error for progress.
// The context run gets is cancelled by SIGINT or SIGTERM, so that run can
// stop and release what it started (kill its redis-servers) instead of
// the process dying. When a step fails, Main prints the error after the
// program's name to standard error and exits with status 1. With -h (or
// -help), parse has printed the usage and Main exits with status 0.
func Main[C any](name string,
	parse func(args []string, stderr io.Writer) (C, error),
	run func(ctx context.Context, cfg C, env Env, stdout, stderr io.Writer) error,
) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := start(ctx, os.Args[1:], os.Stdout, os.Stderr, parse, run)
	stop()
	if code := exitStatus(name, err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitStatus returns the exit status of a program called name whose start
// returned err, after printing err, if it is a failure, to stderr: 0 for
// no error and for flag.ErrHelp (the usage, asked for with -h, is already
// printed), 1 for any other error.
func exitStatus(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintln(stderr, name+":", err)
	return 1
}

// start is Main's body, with the process's arguments and output as
// parameters.
func start[C any](ctx context.Context, args []string, stdout, stderr io.Writer,
	parse func(args []string, stderr io.Writer) (C, error),
	run func(ctx context.Context, cfg C, env Env, stdout, stderr io.Writer) error,
) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	env, err := locate()
	if err != nil {
		return err
	}
	return run(ctx, cfg, env, stdout, stderr)
}

// NewFlagSet returns the flag set of the program called name: errors are
// returned by Parse rather than exiting, and usage goes to stderr.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Parse parses args with fs and refuses positional arguments, which no
// benchmark takes. With -h it returns flag.ErrHelp, after fs printed the
// usage; Main then exits with status 0.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// PositiveInts parses the value of the flag called name: a comma-separated
// list of positive integers.
func PositiveInts(name, list string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive integer", name, f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// Durations parses the value of the flag called name: a comma-separated
// list of durations, each between lo and hi.
func Durations(name, list string, lo, hi time.Duration) ([]time.Duration, error) {
	var ds []time.Duration
	for _, f := range strings.Split(list, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < lo || d > hi {
			return nil, fmt.Errorf("-%s: %q is not a duration between %v and %v", name, f, lo, hi)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// locate finds the redis-server binary and describes the machine.
func locate() (Env, error) {
	bin, err := redisnode.BinPath()
	if err != nil {
		return Env{}, err
	}
	m, err := machine.Describe(bin)
	if err != nil {
		return Env{}, err
	}
	return Env{RedisBin: bin, Machine: m}, nil
}
