package redisproc

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// start starts a server for t, which kills it when the test ends.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

func config(t *testing.T, args ...string) Config {
	t.Helper()
	bin, err := BinPath()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Bin: bin, Dir: t.TempDir(), Args: args}
}

func mustAnswer(t *testing.T, s *Server) {
	t.Helper()
	if err := probe(s.Addr(), s.Pid()); err != nil {
		t.Fatalf("server %s: %v", s.Addr(), err)
	}
}

func TestStartKillRestart(t *testing.T) {
	t.Parallel()
	s := start(t, config(t))
	mustAnswer(t, s)
	addr, pid := s.Addr(), s.Pid()

	s.Kill()
	if s.Running() {
		t.Error("Running() = true after Kill")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d still exists after Kill (kill 0: %v)", pid, err)
	}
	s.Kill() // killing a dead server does nothing
	if err := s.Pause(); err == nil {
		t.Error("Pause of a killed server succeeded")
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != addr || s.Pid() == pid || !s.Running() {
		t.Errorf("after Restart: Addr() = %s, Pid() = %d, Running() = %t; want %s, a new pid, true",
			s.Addr(), s.Pid(), s.Running(), addr)
	}
	mustAnswer(t, s)
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := start(t, config(t))
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	if !s.Running() {
		t.Error("Running() = false for a paused server")
	}
	if err := probe(s.Addr(), s.Pid()); err == nil {
		t.Error("a paused server answered")
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	mustAnswer(t, s)
	if err := s.Pause(); err != nil { // left paused: Kill must still end it
		t.Fatal(err)
	}
}

func TestLaunchDetectsPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &Server{cfg: config(t), port: ln.Addr().(*net.TCPAddr).Port}

	if err := s.launch(); !errors.Is(err, errAddrInUse) {
		if err == nil {
			s.Kill()
		}
		t.Fatalf("launch on a taken port: err = %v, want errAddrInUse", err)
	}
}

func TestBadArgsFailWithLog(t *testing.T) {
	t.Parallel()
	s, err := Start(config(t, "--no-such-directive", "1"))
	if err == nil {
		s.Kill()
		t.Fatal("Start with a bad argument succeeded")
	}
	if !strings.Contains(err.Error(), "Bad directive or wrong number of arguments") {
		t.Errorf("Start with a bad argument: err = %v, want the server's log", err)
	}
}

func TestBinPath(t *testing.T) {
	fallback := filepath.Join(t.TempDir(), "redis-server")
	if err := os.WriteFile(fallback, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())

	if _, err := BinPath(); err == nil || !strings.Contains(err.Error(), "redis-server not found on PATH") {
		t.Errorf("BinPath() with an empty PATH: err = %v, want not found", err)
	}
	if got, err := BinPath(filepath.Join(t.TempDir(), "missing"), fallback); got != fallback || err != nil {
		t.Errorf("BinPath(missing, %s) = %q, %v; want the fallback", fallback, got, err)
	}
}

func TestProbeChecksPid(t *testing.T) {
	t.Parallel()
	// A server that owns the port must not pass for the one just started.
	s := start(t, config(t))
	if err := probe(s.Addr(), s.Pid()+1); err == nil {
		t.Error("probe accepted the answer of another process")
	}
}
