package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// readyTimeout bounds how long a starting redis-server may take to answer
// PING.
const readyTimeout = 10 * time.Second

// logName is the file, in the server's directory, that collects the output
// of every run of redis-server.
const logName = "redis.log"

// errAddrInUse reports that redis-server could not bind its port.
var errAddrInUse = errors.New("address already in use")

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

// launch runs redis-server with args in dir and waits until it answers
// PING on addr. When it fails the process has been killed and reaped; the
// error wraps errAddrInUse if the port was taken.
func launch(bin string, args []string, dir, addr string) (*process, error) {
	logPath := filepath.Join(dir, logName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	offset, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redistest: start redis-server: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()

	if err := p.waitReady(addr); err != nil {
		p.kill()
		log := logTail(logPath, offset, 20)
		if strings.Contains(log, "Address already in use") {
			err = errAddrInUse
		}
		return nil, fmt.Errorf("redistest: redis-server on %s: %w\n--- %s ---\n%s", addr, err, logPath, log)
	}
	return p, nil
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

// logTail returns the last n lines written to the log at path from offset on.
func logTail(path string, offset int64, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data[min(offset, int64(len(data))):])), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
