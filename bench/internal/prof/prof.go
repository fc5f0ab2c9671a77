// Package prof writes a CPU profile of a benchmark run when asked to.
package prof

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
)

// StartCPU starts a CPU profile into path and returns the function that
// stops it and closes the file, with allocation profiles of its start and
// end beside it (see writeAllocs). With an empty path it does nothing.
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
	if err := writeAllocs(path + ".allocs0"); err != nil {
		pprof.StopCPUProfile()
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return errors.Join(f.Close(), writeAllocs(path+".allocs"))
	}, nil
}

// writeAllocs writes the allocations so far (the allocs profile) into
// path: StartCPU writes one at the start (path.allocs0) and one at the end
// (path.allocs), and go tool pprof -base path.allocs0 path.allocs shows
// those of the profile's time.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("allocs profile: %w", err)
	}
	return f.Close()
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
