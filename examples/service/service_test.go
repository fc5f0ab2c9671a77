package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/store"
)

// TestService builds the service, runs it against three real Redis
// servers, scrapes /metrics and /healthz, sends SIGTERM while a job runs
// and checks the graceful shutdown: the job is cancelled, its lock
// released, and the process exits 0.
func TestService(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "service")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := redistest.Start(t, 3)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"REDCRON_ADDRS="+strings.Join(c.Addrs(), ","),
		"REDCRON_LISTEN=127.0.0.1:0", "REDCRON_FAST=1", "REDCRON_TRUSTED=1",
		"REDCRON_GRACE=500ms", "REDCRON_INSTANCE=test-replica")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var log []string
	addr := ""
	deadline := time.After(15 * time.Second)
	for addr == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the service exited before serving (%v): %q", <-exited, log)
			}
			log = append(log, line)
			if m := regexp.MustCompile(`msg=serving addr=(\S+)`).FindStringSubmatch(line); m != nil {
				addr = m[1]
			}
		case <-deadline:
			t.Fatalf("the service did not start serving: %q", log)
		}
	}
	base := "http://" + addr

	// Runs show up in /metrics.
	runs := regexp.MustCompile(`redcron_scheduler_runs_total\{job_name="report",result="success"\} (\d+)`)
	waitFor(t, 15*time.Second, "two successful report runs in /metrics", func() bool {
		m := runs.FindStringSubmatch(get(t, base+"/metrics"))
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		return n >= 2
	})
	metricsText := get(t, base+"/metrics")
	for _, want := range []string{`redcron_lock_node_up{node="` + c.Addrs()[0] + `"} 1`, "go_goroutines", `redcron_lock_acquire_attempts_total{result="acquired"}`} {
		if !strings.Contains(metricsText, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// /healthz shows the jobs; wait for the batch job to be running.
	waitFor(t, 15*time.Second, "the batch job running in /healthz", func() bool {
		var h struct {
			Nodes map[string]string `json:"nodes"`
			Jobs  []struct {
				Name    string `json:"name"`
				Running bool   `json:"running"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(get(t, base+"/healthz")), &h); err != nil {
			t.Fatalf("/healthz: %v", err)
		}
		for _, j := range h.Jobs {
			if j.Name == "batch" && j.Running {
				return len(h.Nodes) == 3
			}
		}
		return false
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	func() {
		timeout := time.After(15 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					waitErr = <-exited
					return
				}
				log = append(log, line)
			case <-timeout:
				t.Fatalf("no exit 15 s after SIGTERM: %q", log)
			}
		}
	}()
	if waitErr != nil {
		t.Errorf("exit: %v; log %q", waitErr, log)
	}
	all := strings.Join(log, "\n")
	for _, want := range []string{"shutting down", `msg="batch stopped"`, "cause=\"scheduler: shutting down\"", "msg=stopped"} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %q:\n%s", want, all)
		}
	}
	// The leases were released, not left to expire.
	ctx := context.Background()
	ks, err := engine.NewKeyspace("")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Nodes() {
		keys, err := s.Client(t).Keys(ctx, ks.Pattern()).Result() // a test may use KEYS on its own server
		if err != nil {
			t.Fatalf("node %s: KEYS: %v", s.Addr(), err)
		}
		var locks []string
		for _, k := range keys {
			if kind, _ := ks.Parse(k); kind == engine.KindLock {
				locks = append(locks, k)
			}
		}
		if len(locks) != 0 {
			t.Errorf("node %s: lock keys left after shutdown: %v", s.Addr(), locks)
		}
	}
	if v, fence, err := store.FencedGet(ctx, c.Node(0).Client(t), "example:report"); err != nil || fence == 0 || !strings.Contains(v, "test-replica") {
		t.Errorf("fenced report: %q, %d, %v", v, fence, err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// waitFor polls cond until it holds, failing the test after d: the service
// is another process, so there is no channel to wait on.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
