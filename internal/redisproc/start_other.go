//go:build !linux

package redisproc

import "os/exec"

// startCmd starts cmd. Only Linux has a parent-death signal, so elsewhere a
// redis-server outlives a process that ends without killing it. The caller
// must call reaped once cmd.Wait has returned.
func startCmd(cmd *exec.Cmd) (reaped func(), err error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {}, nil
}
