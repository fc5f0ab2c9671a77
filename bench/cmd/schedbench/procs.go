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
	"time"
)

// replicaProcs is the replica processes of one run.
type replicaProcs struct {
	cmds []*exec.Cmd
	ins  []io.WriteCloser // their standard inputs: the spec, then the start
	decs []*gob.Decoder   // of their standard outputs: ready, then the output
	// killed is set for the replicas killed on purpose (killOne): their
	// output and exit status are not waited for.
	killed []bool
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
		p.killed = append(p.killed, false)
		if err := json.NewEncoder(in).Encode(spec); err != nil {
			p.kill()
			return nil, fmt.Errorf("replica %d: sending its spec: %w", i, err)
		}
	}
	return p, nil
}

// decodeAll decodes one value from the standard output of every replica
// not killed on purpose, in parallel (a replica blocks on a full pipe
// until it is read); what names the value in errors. A killed replica's
// value is left zero. On an error it kills the replicas, and the error
// includes their exit status.
func decodeAll[T any](p *replicaProcs, what string) ([]T, error) {
	vs := make([]T, len(p.decs))
	errs := make([]error, len(p.decs))
	var wg sync.WaitGroup
	for i, d := range p.decs {
		if p.killed[i] {
			continue
		}
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

// killOne kills replica i (SIGKILL, Process.Kill), as a crash, and returns the
// instant just before: from then on, it reports nothing. wait then
// expects neither its output nor a successful exit.
func (p *replicaProcs) killOne(i int) (time.Time, error) {
	p.killed[i] = true
	at := time.Now()
	if err := p.cmds[i].Process.Kill(); err != nil {
		return at, fmt.Errorf("replica %d: killing it: %w", i, err)
	}
	return at, nil
}

// wait waits for every replica process to report and exit, and returns
// the outputs of those not killed on purpose (killOne), in order; a
// killed one must have died of its signal.
func (p *replicaProcs) wait() ([]replicaOutput, error) {
	outs, err := decodeAll[replicaOutput](p, "output")
	if err != nil {
		return nil, err
	}
	var errs []error
	var live []replicaOutput
	for i, cmd := range p.cmds {
		err := cmd.Wait()
		if !p.killed[i] {
			live = append(live, outs[i])
			if err != nil {
				errs = append(errs, fmt.Errorf("replica %d: %w", i, err))
			}
			continue
		}
		if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.Exited() {
			errs = append(errs, fmt.Errorf("replica %d, killed: it did not die of the signal: %v", i, err))
		}
	}
	return live, errors.Join(errs...)
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
