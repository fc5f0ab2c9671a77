package redcron_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/e2e"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

// quickstartPrefix is the key prefix the Quickstart's program sets.
const quickstartPrefix = "hello"

// TestQuickstart builds the README's Quickstart program from the README's
// own text, runs two copies of it against three fresh redis-servers, and
// checks that each logs when the nodes' votes begin and that each tick
// after that is run by one copy only; that a trigger (as the admin
// command's) runs once and is logged as a manual run; that its keys are
// under its own prefix; and that each copy stops cleanly on SIGTERM, as
// under systemd or Kubernetes.
func TestQuickstart(t *testing.T) {
	t.Parallel()
	bin := buildQuickstart(t)
	c := redistest.Start(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var outs [2]*e2e.SyncBuffer
	var cmds [2]*exec.Cmd
	for i := range outs {
		outs[i] = &e2e.SyncBuffer{}
		cmds[i] = exec.CommandContext(ctx, bin, c.Addrs()...)
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}
	}()
	// Fresh servers vote after the max TTL of a minute; three ticks of
	// @every 5s after that are enough.
	ticks := regexp.MustCompile(`tick (\d\d:\d\d:\d\d) runs here`)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if len(ticks.FindAllString(outs[0].String()+outs[1].String(), -1)) >= 3 {
			break
		}
		<-time.After(500 * time.Millisecond)
	}
	for i, out := range outs {
		if got := out.String(); !strings.Contains(got, "redis node warming_up") || !strings.Contains(got, "votes_from=") {
			t.Errorf("copy %d did not log when the nodes' votes begin:\n%s", i, got)
		}
	}
	seen := map[string]int{}
	for _, out := range outs {
		for _, m := range ticks.FindAllStringSubmatch(out.String(), -1) {
			seen[m[1]]++
		}
	}
	if len(seen) < 3 {
		t.Fatalf("%d ticks ran in two minutes; the copies said:\n%s\n---\n%s", len(seen), outs[0], outs[1])
	}
	for tick, n := range seen {
		if n != 1 {
			t.Errorf("tick %s ran %d times", tick, n)
		}
	}
	triggerQuickstart(t, c)
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(outs[0].String()+outs[1].String(), "a manual run runs here") && time.Now().Before(deadline) {
		<-time.After(100 * time.Millisecond)
	}
	if got := outs[0].String() + outs[1].String(); strings.Count(got, "a manual run runs here") != 1 || strings.Contains(got, "tick 00:00:00") {
		t.Errorf("a trigger, want one line about a manual run, and no tick 00:00:00:\n%s", got)
	}
	// The program's keys are under its own prefix, none under the default.
	for _, srv := range c.Nodes() {
		for pattern, want := range map[string]bool{quickstartPrefix + ":*": true, "redcron:*": false} {
			keys, _, err := srv.Client(t).Scan(context.Background(), 0, pattern, 1000).Result()
			if err != nil || (len(keys) > 0) != want {
				t.Errorf("node %s: keys %s: %q, %v", srv.Addr(), pattern, keys, err)
			}
		}
	}
	for i, cmd := range cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("copy %d on SIGTERM: %v, want a clean stop; it said:\n%s", i, err, outs[i])
		}
	}
}

// triggerQuickstart places a trigger of the Quickstart's job, as the
// admin command does, and waits until a copy took it.
func triggerQuickstart(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	keys, err := engine.NewKeyspace(quickstartPrefix)
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster.Cluster{Keys: keys}
	for _, srv := range c.Nodes() {
		n, err := engine.NewNode(srv.Addr(), srv.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cl.Trigger(ctx, "hello", "quickstart-test", 30*time.Second); err != nil {
		t.Fatalf("trigger: %v", err)
	}
}

// TestQuickstartSaysGoVersion: the Quickstart says which Go it needs, the
// go directive of go.mod.
func TestQuickstartSaysGoVersion(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	_, quick, _ := strings.Cut(string(readme), "## Quickstart\n")
	quick, _, _ = strings.Cut(quick, "\n## ")
	if want := "Go " + string(m[1]) + " or later"; !strings.Contains(quick, want) {
		t.Errorf("the Quickstart does not say %q", want)
	}
}

// TestQuickstartNodeDown runs the README's Quickstart with one of its
// three nodes down, until a tick has been tried (and skipped: the others
// are warming up), and checks that it logged each node's state once, and
// not one of go-redis's own lines about its failed dials.
func TestQuickstartNodeDown(t *testing.T) {
	t.Parallel()
	bin := buildQuickstart(t)
	c := redistest.Start(t, 3)
	c.Node(2).Kill()
	out := &e2e.SyncBuffer{}
	cmd := exec.Command(bin, c.Addrs()...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	// The Quickstart's job is due every 5 s: its first tick is skipped
	// within 10 s, after many attempts on the dead node.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "tick skipped") && time.Now().Before(deadline) {
		<-time.After(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	stopped = true
	got := out.String()
	if !strings.Contains(got, "tick skipped") {
		t.Fatalf("no tick was tried in 30 s:\n%s", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "redis: ") || strings.Contains(line, "connection pool") {
			t.Errorf("go-redis logged: %s", line)
		}
	}
	if n := strings.Count(got, "redis node "); n != 3 {
		t.Errorf("%d lines about nodes, want one per node:\n%s", n, got)
	}
	for i, a := range c.Addrs() {
		want := "redis node warming_up node=" + a + " "
		if i == 2 {
			want = "redis node down node=" + a + " "
		}
		if !strings.Contains(got, want) {
			t.Errorf("no line %q:\n%s", want, got)
		}
	}
}

// buildQuickstart writes the README's Quickstart program into a module of
// its own that uses this checkout, and builds it.
func buildQuickstart(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Quickstart\n")
	if !ok {
		t.Fatal("README.md has no Quickstart")
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	if !ok {
		t.Fatal("the Quickstart has no Go code")
	}
	src, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("the Quickstart's Go code does not end")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module quickstart\n\ngo 1.26\n\nrequire github.com/redcron/redcron v0.0.0\n\nreplace github.com/redcron/redcron => " + root + "\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"main.go": []byte(src), "go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "quickstart")
	build := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "GOPROXY=off")
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		t.Fatalf("the README's Quickstart does not build: %v\n%s\n%s", err, out.String(), src)
	}
	return bin
}
