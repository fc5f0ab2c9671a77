package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the process cmd starts die with this one, even if
// this one is killed.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
