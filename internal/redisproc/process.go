package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// readyTimeout bounds how long a starting redis-server may take to answer
// PING.
const readyTimeout = 10 * time.Second

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

// waitReady polls addr until this process answers PING, it exits, or
// readyTimeout passes.
func (p *process) waitReady(addr string) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		err := probe(addr, p.cmd.Process.Pid)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer after %v: %w", readyTimeout, err)
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited during startup (%v)", p.cmd.ProcessState)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL (which also ends a stopped process) and waits until the
// process has been reaped.
func (p *process) kill() {
	_ = p.cmd.Process.Kill() // fails only if it has already exited
	<-p.done
}

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// probe sends PING and INFO server to addr and checks that the answer comes
// from the process pid, not from another server that owns the port.
func probe(addr string, pid int) error {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(250 * time.Millisecond)); err != nil {
		return err
	}
	if _, err := io.WriteString(conn, "PING\r\nINFO server\r\n"); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	if line, err = r.ReadString('\n'); err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "$"))
	if err != nil {
		return fmt.Errorf("INFO answered %q", strings.TrimSpace(line))
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		return err
	}
	if !strings.Contains(string(info), "\r\nprocess_id:"+strconv.Itoa(pid)+"\r\n") {
		return errors.New("another process answers on this port")
	}
	return nil
}
