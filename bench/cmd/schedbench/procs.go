package main

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
)

// replicaProcs is the replica processes of one run.
type replicaProcs struct {
	cmds []*exec.Cmd
	ins  []io.WriteCloser // their standard inputs: the spec, then the start
	decs []*gob.Decoder   // of their standard outputs: ready, then the output
}

// startReplicas starts n replica processes of the executable exe (this
// program's, or a baseline's), numbered from 0, and sends them spec; their
// standard error goes to progress. If profile is not empty, replica i
// writes a CPU profile of its window to profile.i.
func startReplicas(ctx context.Context, exe string, n int, spec replicaSpec, profile string, progress io.Writer) (*replicaProcs, error) {
	p := &replicaProcs{}
	for i := range n {
		spec.ID = i
		if profile != "" {
			spec.Profile = fmt.Sprintf("%s.%d", profile, i)
		}
		cmd := exec.CommandContext(ctx, exe, replicaArg)
		cmd.Stderr = progress
		in, err := cmd.StdinPipe()
		if err != nil {
			p.kill()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			p.kill()
			return nil, err
		}
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			p.kill()
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		p.cmds, p.ins, p.decs = append(p.cmds, cmd), append(p.ins, in), append(p.decs, gob.NewDecoder(out))
		if err := json.NewEncoder(in).Encode(spec); err != nil {
			p.kill()
			return nil, fmt.Errorf("replica %d: sending its spec: %w", i, err)
		}
	}
	return p, nil
}

// decodeAll decodes one value from every replica's standard output, in
// parallel (a replica blocks on a full pipe until it is read); what names
// the value in errors. On an error it kills the replicas, and the error
// includes their exit status.
func decodeAll[T any](p *replicaProcs, what string) ([]T, error) {
	vs := make([]T, len(p.decs))
	errs := make([]error, len(p.decs))
	var wg sync.WaitGroup
	for i, d := range p.decs {
		wg.Go(func() {
			if err := d.Decode(&vs[i]); err != nil {
				errs[i] = fmt.Errorf("replica %d: reading its %s: %w", i, what, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, p.kill())
	}
	return vs, nil
}

// ready waits until every replica reports that its jobs are registered.
func (p *replicaProcs) ready() ([]replicaReady, error) {
	return decodeAll[replicaReady](p, "readiness")
}

// start tells every replica when to run and what to measure.
func (p *replicaProcs) start(g replicaGo) error {
	for i, in := range p.ins {
		err := json.NewEncoder(in).Encode(g)
		if cerr := in.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return errors.Join(fmt.Errorf("replica %d: sending its start: %w", i, err), p.kill())
		}
	}
	return nil
}

// wait waits for every replica process to report and exit, and returns
// their outputs.
func (p *replicaProcs) wait() ([]replicaOutput, error) {
	outs, err := decodeAll[replicaOutput](p, "output")
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, cmd := range p.cmds {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("replica %d: %w", i, err))
		}
	}
	return outs, errors.Join(errs...)
}

// kill kills the replica processes started, waits for them and returns
// the exit status of those that had exited on their own with a failure.
func (p *replicaProcs) kill() error {
	var errs []error
	for i, cmd := range p.cmds {
		_ = cmd.Process.Kill()
		if err := cmd.Wait(); err != nil {
			if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.Exited() {
				errs = append(errs, fmt.Errorf("replica %d: %w", i, err))
			}
		}
	}
	return errors.Join(errs...)
}
