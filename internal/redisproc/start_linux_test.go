package redisproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// orphanDirEnv, when set, makes TestServerDiesWithStarter the child that
// starts a server in that directory and then crashes.
const orphanDirEnv = "REDISPROC_ORPHAN_DIR"

// TestServerDiesWithStarter: a process that starts a server and then dies of
// a panic in another goroutine, without killing the server, takes the
// server with it. The test runs itself as that process.
func TestServerDiesWithStarter(t *testing.T) {
	if dir := os.Getenv(orphanDirEnv); dir != "" {
		bin, err := BinPath()
		if err != nil {
			t.Fatal(err)
		}
		s, err := Start(Config{Bin: bin, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("redis-server pid %d\n", s.Pid())
		go func() { panic("crash without killing the server") }()
		select {}
	}
	t.Parallel()

	child := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithStarter$")
	child.Env = append(os.Environ(), orphanDirEnv+"="+t.TempDir())
	var stderr bytes.Buffer
	child.Stderr = &stderr
	out, err := child.Output()
	m := regexp.MustCompile(`redis-server pid (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the child started no server (%v): %s%s", err, out, stderr.Bytes())
	}
	if !bytes.Contains(stderr.Bytes(), []byte("crash without killing the server")) {
		t.Fatalf("the child did not die of its panic (%v): %s", err, stderr.Bytes())
	}
	pid, _ := strconv.Atoi(string(m[1]))
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if !waitFor(10*time.Second, func() bool { return !alive(pid) }) {
		t.Errorf("redis-server %d still runs 10 s after the process that started it died", pid)
	}
}

// TestServerOutlivesStarterThread: a server started from a goroutine that
// ends while locked to its thread, which the runtime then ends, keeps
// running (the parent-death signal follows the thread that forked, and
// Start forks from a thread of its own).
func TestServerOutlivesStarterThread(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	type started struct {
		s   *Server
		tid int
		err error
	}
	var st started
	for {
		ch := make(chan started, 1)
		go func() {
			runtime.LockOSThread()
			tid := syscall.Gettid()
			if tid == syscall.Getpid() {
				// The runtime never ends the main thread: try another.
				runtime.UnlockOSThread()
				ch <- started{tid: tid}
				return
			}
			s, err := Start(cfg)
			ch <- started{s, tid, err}
			// Returns still locked: the runtime ends this thread.
		}()
		if st = <-ch; st.err != nil {
			t.Fatal(st.err)
		}
		if st.s != nil {
			break
		}
	}
	t.Cleanup(st.s.Kill)
	task := fmt.Sprintf("/proc/self/task/%d", st.tid)
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(task); return os.IsNotExist(err) }) {
		t.Fatalf("thread %d did not end after its locked goroutine returned", st.tid)
	}
	// The kernel sends the parent-death signal as the thread exits: a
	// server killed by it answers nothing from now on.
	mustAnswer(t, st.s)
}

// alive reports whether pid is a redis-server that has not exited (a
// zombie waiting for its new parent to reap it has).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	m := regexp.MustCompile(`^\d+ \((.*)\) (\S)`).FindSubmatch(stat)
	return m != nil && string(m[1]) == "redis-server" && string(m[2]) != "Z"
}

// waitFor polls cond every 10 ms until it holds or limit passes, and
// reports whether it held. It is for conditions outside this process, which
// nothing signals.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
