package redisproc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// startCmd starts cmd with SIGKILL as its parent-death signal, so that a
// redis-server does not outlive the process that started it even when that
// process ends without running its cleanups (a test binary's -timeout
// panic, a panic in another goroutine, a SIGKILL). The caller must call
// reaped once cmd.Wait has returned.
//
// The kernel sends the parent-death signal when the thread that forked the
// child exits, not the process (prctl(2), PR_SET_PDEATHSIG; see
// https://go.dev/issue/27505), and the Go runtime ends the thread of a
// goroutine that returns while locked to it (runtime.LockOSThread), which
// any goroutine may do. So servers are started from a goroutine of this
// package locked to its thread, where nothing else runs, and that
// goroutine unlocks and returns only once every process it started has
// been reaped.
func startCmd(cmd *exec.Cmd) (reaped func(), err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	starter.mu.Lock()
	if starter.reqs == nil {
		starter.reqs = make(chan startReq)
		go runStarter(starter.reqs)
	}
	reqs := starter.reqs
	starter.live++ // before the send, so that reqs stays open for it
	starter.mu.Unlock()

	done := make(chan error, 1)
	reqs <- startReq{cmd: cmd, done: done}
	if err := <-done; err != nil {
		release(reqs)
		return nil, err
	}
	return sync.OnceFunc(func() { release(reqs) }), nil
}

// starter is the goroutine that starts redis-server processes.
var starter struct {
	mu   sync.Mutex
	reqs chan startReq // nil when no starter runs
	live int           // starts asked of it, less the processes reaped and the failed starts
}

type startReq struct {
	cmd  *exec.Cmd
	done chan<- error
}

func runStarter(reqs <-chan startReq) {
	runtime.LockOSThread()
	for req := range reqs {
		req.done <- req.cmd.Start()
	}
	// reqs is closed once every child of this thread has been reaped: the
	// thread may go back to the runtime.
	runtime.UnlockOSThread()
}

// release counts a process started through reqs as reaped, or a start as
// failed, and stops the starter when nothing it started is left.
func release(reqs chan startReq) {
	starter.mu.Lock()
	defer starter.mu.Unlock()
	if starter.live--; starter.live == 0 {
		close(reqs)
		starter.reqs = nil
	}
}
