package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMain checks, after all tests and their cleanups, that no redis-server
// child process and no goroutine of this package is left behind.
func TestMain(m *testing.M) {
	QuietClients() // the tests kill servers on purpose
	code := m.Run()
	if code == 0 {
		if err := checkNoLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestStartSetGet(t *testing.T) {
	t.Parallel()
	c := Start(t, 3)
	ctx := context.Background()

	if got := len(c.Nodes()); got != 3 {
		t.Fatalf("len(Nodes()) = %d, want 3", got)
	}
	seen := map[string]bool{}
	for i, addr := range c.Addrs() {
		s := c.Node(i)
		if addr != s.Addr() || addr != s.ServerAddr() {
			t.Errorf("node %d: Addrs()[i] = %s, Addr() = %s, ServerAddr() = %s; want all equal without a proxy",
				i, addr, s.Addr(), s.ServerAddr())
		}
		if seen[addr] {
			t.Errorf("address %s used twice", addr)
		}
		seen[addr] = true
		if !s.Running() {
			t.Errorf("node %d not running", i)
		}
	}
	// Every server is independent: each keeps its own value.
	for i, s := range c.Nodes() {
		if err := s.Client(t).Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatalf("node %d: SET: %v", i, err)
		}
	}
	for i, s := range c.Nodes() {
		got, err := s.Client(t).Get(ctx, "k").Result()
		if err != nil || got != strconv.Itoa(i) {
			t.Errorf("node %d: GET k = %q, %v; want %d", i, got, err, i)
		}
	}
}

func TestStartFiveInParallel(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := Start(t, 5)
	t.Logf("started 5 servers in %v", time.Since(begin))
	for i, s := range c.Nodes() {
		if err := s.Client(t).Ping(context.Background()).Err(); err != nil {
			t.Errorf("node %d: PING: %v", i, err)
		}
	}
}

func TestKill(t *testing.T) {
	t.Parallel()
	c := Start(t, 2)
	ctx := context.Background()
	victim, other := c.Node(0).Client(t), c.Node(1).Client(t)
	mustPing(t, victim)

	c.Node(0).Kill()

	if c.Node(0).Running() {
		t.Error("Running() = true after Kill")
	}
	if err := victim.Ping(ctx).Err(); err == nil {
		t.Error("PING to a killed server succeeded")
	}
	mustPing(t, other)
	c.Node(0).Kill() // killing a dead server is a no-op
}

func TestRestartComesBackEmpty(t *testing.T) {
	t.Parallel()
	s := Start(t, 1).Node(0)
	ctx := context.Background()
	client := s.Client(t)
	if err := client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	runID := infoField(t, client, "run_id")
	addr := s.ServerAddr()

	s.Restart()

	if !s.Running() {
		t.Error("Running() = false after Restart")
	}
	if s.ServerAddr() != addr {
		t.Errorf("ServerAddr() = %s after Restart, want %s", s.ServerAddr(), addr)
	}
	mustPing(t, client)
	if err := client.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET k after Restart: err = %v, want redis.Nil", err)
	}
	if got := infoField(t, client, "run_id"); got == runID {
		t.Errorf("run_id unchanged by Restart: %s", got)
	}
}

func TestRestartAfterKill(t *testing.T) {
	t.Parallel()
	s := Start(t, 1).Node(0)
	s.Kill()
	s.Restart()
	mustPing(t, s.Client(t))
}

func TestAppendOnlySurvivesRestart(t *testing.T) {
	t.Parallel()
	s := Start(t, 1, WithAppendOnly()).Node(0)
	ctx := context.Background()
	client := s.Client(t)
	if got := infoField(t, client, "aof_enabled"); got != "1" {
		t.Fatalf("aof_enabled = %q, want 1", got)
	}
	if err := client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	s.Kill()
	s.Restart()

	if got, err := client.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET k after Restart = %q, %v; want v", got, err)
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	client := Start(t, 1, WithArgs("--maxmemory", "12345678")).Node(0).Client(t)
	got, err := client.ConfigGet(context.Background(), "maxmemory").Result()
	if err != nil || got["maxmemory"] != "12345678" {
		t.Errorf("CONFIG GET maxmemory = %v, %v; want 12345678", got, err)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := Start(t, 1).Node(0)
	client := s.Client(t)
	mustPing(t, client)

	s.Pause()
	if !s.Running() {
		t.Error("Running() = false for a paused server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := client.Ping(ctx).Err()
	elapsed := time.Since(begin)
	if err == nil {
		t.Fatal("PING to a paused server succeeded")
	}
	// The 1 s ReadTimeout must not be what ended the command.
	if elapsed < 150*time.Millisecond || elapsed > 900*time.Millisecond {
		t.Errorf("PING to a paused server failed after %v (%v), want about 200ms", elapsed, err)
	}

	s.Resume()
	mustPing(t, client)

	s.Pause() // left paused: the cleanup must still kill and reap it
}

func TestProxyLatency(t *testing.T) {
	t.Parallel()
	s := Start(t, 1, WithProxy()).Node(0)
	if s.Addr() == s.ServerAddr() {
		t.Fatalf("Addr() = ServerAddr() = %s with WithProxy", s.Addr())
	}
	client := s.Client(t)
	mustPing(t, client) // opens the pooled connection

	base := pingTime(t, client)
	s.SetLatency(50 * time.Millisecond)
	slow := pingTime(t, client)
	s.SetLatency(0)
	fast := pingTime(t, client)

	t.Logf("PING round trip: %v without latency, %v with 50ms, %v after reset", base, slow, fast)
	if slow < 100*time.Millisecond {
		t.Errorf("PING with 50ms latency each way took %v, want >= 100ms", slow)
	}
	if base >= slow || fast >= slow {
		t.Errorf("latency not visible: %v and %v without, %v with", base, fast, slow)
	}
}

func TestProxyKeepsOrderOfLargeData(t *testing.T) {
	t.Parallel()
	s := Start(t, 1, WithProxy()).Node(0)
	s.SetLatency(5 * time.Millisecond)
	client := s.Client(t)
	ctx := context.Background()
	value := make([]byte, 1<<20)
	for i := range value {
		value[i] = byte(i % 251)
	}
	if err := client.Set(ctx, "big", value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := client.Get(ctx, "big").Bytes()
	if err != nil || !bytes.Equal(got, value) {
		t.Errorf("GET big: %d bytes, err %v; want the 1 MiB written", len(got), err)
	}
}

func TestProxyCutHeal(t *testing.T) {
	t.Parallel()
	s := Start(t, 1, WithProxy()).Node(0)
	ctx := context.Background()
	client := s.Client(t)
	mustPing(t, client)

	s.Cut()
	if err := client.Ping(ctx).Err(); err == nil {
		t.Error("PING over an existing connection succeeded after Cut")
	}
	if err := s.Client(t).Ping(ctx).Err(); err == nil {
		t.Error("PING over a new connection succeeded after Cut")
	}
	mustPing(t, clientFor(t, s.ServerAddr())) // only the proxied path is cut

	s.Heal()
	mustPing(t, client)
}

func TestIndependentProxies(t *testing.T) {
	t.Parallel()
	s := Start(t, 1).Node(0)
	p1, p2 := s.NewProxy(t), s.NewProxy(t)
	c1, c2 := clientFor(t, p1.Addr()), clientFor(t, p2.Addr())
	mustPing(t, c1)
	mustPing(t, c2)

	p1.Cut()
	if err := c1.Ping(context.Background()).Err(); err == nil {
		t.Error("PING through the cut proxy succeeded")
	}
	mustPing(t, c2)

	p1.Heal()
	mustPing(t, c1)
}

func TestCleanupReapsServers(t *testing.T) {
	var pids []int
	t.Run("inner", func(t *testing.T) {
		c := Start(t, 2, WithProxy())
		for _, s := range c.Nodes() {
			pids = append(pids, s.proc.Pid())
			mustPing(t, s.Client(t)) // leaves an open proxied connection
		}
		c.Node(1).Pause()
	})
	for _, pid := range pids {
		// The process was reaped by the cleanup, so the pid no longer exists.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("redis-server pid %d still exists after cleanup (kill 0: %v)", pid, err)
		}
	}
}

func TestMissingRedisServerFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ft := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { Start(ft, 1) }) // Fatalf ends this goroutine
	wg.Wait()
	if !strings.Contains(ft.msg, "redis-server not found") || !strings.Contains(ft.msg, "scripts/test") {
		t.Errorf("Start without redis-server: got failure %q, want one naming redis-server and scripts/test", ft.msg)
	}
}

func TestBadArgsFailWithLog(t *testing.T) {
	t.Parallel()
	ft := &fatalTB{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() { Start(ft, 2, WithArgs("--no-such-directive", "1")) })
	wg.Wait()
	// Both servers report the reason, taken from redis-server's log.
	if got := strings.Count(ft.msg, "Bad directive or wrong number of arguments"); got != 2 {
		t.Errorf("Start with a bad argument: got failure %q, want the log of both servers", ft.msg)
	}
}

// fatalTB records the message of Fatal or Fatalf and ends the calling
// goroutine, as testing.T does, without failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.Fatal(fmt.Sprintf(format, args...))
}

func clientFor(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustPing(t *testing.T, c *redis.Client) {
	t.Helper()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING %s: %v", c.Options().Addr, err)
	}
}

func pingTime(t *testing.T, c *redis.Client) time.Duration {
	t.Helper()
	begin := time.Now()
	mustPing(t, c)
	return time.Since(begin)
}

// infoField returns a field of INFO, e.g. run_id.
func infoField(t *testing.T, c *redis.Client, field string) string {
	t.Helper()
	info, err := c.Info(context.Background()).Result()
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO has no %s", field)
	return ""
}

// checkNoLeaks reports child processes of the test binary and goroutines
// running code of this package or of the packages it wraps. Goroutines are given a moment to return
// after signalling that their work is done.
func checkNoLeaks() error {
	if children := childProcesses(); len(children) > 0 {
		return fmt.Errorf("child processes left after the tests: %v", children)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		leaked := packageGoroutines()
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("goroutines left after the tests:\n%s", strings.Join(leaked, "\n\n"))
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}

// childProcesses lists "pid state command" of the processes whose parent is
// this one, zombies included. It reads /proc and finds nothing without it.
func childProcesses() []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var children []string
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // the process has gone
		}
		// pid (comm) state ppid ...
		s := string(data)
		end := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[end+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			children = append(children, s[:end+1]+" "+fields[0])
		}
	}
	return children
}

// packageGoroutines returns the stacks of goroutines other than the caller's
// that are executing a function of this package, internal/redisproc or
// internal/tcpproxy.
func packageGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "redistest.TestMain(") || strings.Contains(g, "redistest.checkNoLeaks(") {
			continue
		}
		for line := range strings.SplitSeq(g, "\n") {
			if ownCode(line) && !strings.HasPrefix(line, "created by ") {
				leaked = append(leaked, g)
				break
			}
		}
	}
	return leaked
}

// ownCode reports whether a stack line names a function of this package or
// of the packages it wraps.
func ownCode(line string) bool {
	for _, pkg := range []string{"internal/redistest.", "internal/redisproc.", "internal/tcpproxy."} {
		if strings.Contains(line, pkg) {
			return true
		}
	}
	return false
}
