// Package prof writes a CPU profile of a benchmark run when asked to.
package prof

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// StartCPU starts a CPU profile into path and returns the function that
// stops it and closes the file. With an empty path it does nothing.
func StartCPU(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// CPU runs f with a CPU profile written into path (none when path is
// empty) and returns its results, or the error of starting or writing the
// profile when f succeeded.
func CPU[T any](path string, f func() (T, error)) (T, error) {
	stop, err := StartCPU(path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := f()
	if serr := stop(); err == nil {
		err = serr
	}
	return v, err
}
