package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/browsertest"
)

// waitText waits until the text of sel in tab's page has want.
func waitText(t *testing.T, tab context.Context, sel, want string, d time.Duration) {
	t.Helper()
	waitFor(t, d, fmt.Sprintf("%q in %s", want, sel), func() bool { return strings.Contains(browsertest.Text(tab, sel), want) })
}

// replica is one service process.
type replica struct {
	base string // http://host:port
	cmd  *exec.Cmd
	log  chan string
}

// startService starts the service binary as instance, over addrs, with
// env added, and waits for it to serve.
func startService(t *testing.T, bin string, addrs []string, instance string, env ...string) *replica {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(),
		"REDCRON_ADDRS="+strings.Join(addrs, ","), "REDCRON_LISTEN=127.0.0.1:0", "REDCRON_FAST=1", "REDCRON_TRUSTED=1",
		"REDCRON_GRACE=500ms", "REDCRON_INSTANCE="+instance), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := &replica{cmd: cmd, log: make(chan string, 4096)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case r.log <- sc.Text():
			default: // nobody reads the rest
			}
		}
		close(r.log)
	}()
	serving := regexp.MustCompile(`msg=serving addr=(\S+)`)
	deadline := time.After(20 * time.Second)
	for r.base == "" {
		select {
		case line, ok := <-r.log:
			if !ok {
				t.Fatalf("%s exited before serving", instance)
			}
			if m := serving.FindStringSubmatch(line); m != nil {
				r.base = "http://" + m[1]
			}
		case <-deadline:
			t.Fatalf("%s did not start serving", instance)
		}
	}
	return r
}
