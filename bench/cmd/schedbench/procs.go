package main

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// replicaProcs is the replica processes of one run.
type replicaProcs struct {
	cmds []*exec.Cmd
	outs []*bytes.Buffer // their standard outputs
}

// startReplicas starts n replica processes, numbered from 0, running
// spec; their standard error goes to progress. If profile is not empty,
// replica i writes a CPU profile of its window to profile.i.
func startReplicas(ctx context.Context, n int, spec replicaSpec, profile string, progress io.Writer) (*replicaProcs, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &replicaProcs{}
	for i := range n {
		spec.ID = i
		if profile != "" {
			spec.Profile = fmt.Sprintf("%s.%d", profile, i)
		}
		in, err := json.Marshal(spec)
		if err != nil {
			p.kill()
			return nil, err
		}
		cmd := exec.CommandContext(ctx, exe, replicaArg)
		cmd.Stdin = bytes.NewReader(in)
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, progress
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			p.kill()
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		p.cmds, p.outs = append(p.cmds, cmd), append(p.outs, out)
	}
	return p, nil
}

// wait waits for every replica process to exit and returns their outputs.
func (p *replicaProcs) wait() ([]replicaOutput, error) {
	var errs []error
	outs := make([]replicaOutput, len(p.cmds))
	for i, cmd := range p.cmds {
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("replica %d: %w", i, err))
			continue
		}
		if err := gob.NewDecoder(p.outs[i]).Decode(&outs[i]); err != nil {
			errs = append(errs, fmt.Errorf("replica %d: reading its output: %w", i, err))
		}
	}
	return outs, errors.Join(errs...)
}

// kill kills the replica processes started and waits for them.
func (p *replicaProcs) kill() {
	for _, cmd := range p.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
