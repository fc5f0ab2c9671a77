package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/store"
)

// TestMain silences go-redis's logging of the failed dials that the
// tests' killed and stopped servers cause on purpose.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	os.Exit(m.Run())
}

// TestRun runs the whole demo, scenario included, over its in-process
// miniredis nodes (the default, which it kills and restarts) and checks its
// verdict and its narration. TestRunRealServers runs it over real
// redis-server processes.
func TestRun(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags([]string{"-duration", "20s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sum, text := runDemo(t, cfg)
	checkVerdict(t, cfg, sum)
	checkNarration(t, text,
		"killed node 2 and 4: 3 of 5 remain, quorum 3 still holds",
		"killed node 3: 2 of 5 remain",
		"Quorum lost: no replica may run a tick now",
		"✗ no quorum",
		"restarted node 2, 3 and 4",
		"quorum is back",
	)
}

// TestRunRealServers runs the demo with -redis over five real redis-server
// masters, untrusted as the demo leaves them: it does not kill them, but
// stalls a replica during a slow run. Every tick runs exactly once, fences
// rise, and the stalled replica's lease is lost and the next tick runs
// elsewhere.
func TestRunRealServers(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 5)
	cfg, err := parseFlags([]string{"-redis", strings.Join(c.Addrs(), ","), "-duration", "15s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// As the demo's introduction asks: a server votes only once it has
	// been up for longer than the max TTL (the lock TTL) plus a second,
	// and for ticks from the max TTL and 3 s after its start on.
	waitUptime(t, c, cfg.lockTTL+3*time.Second)
	sum, text := runDemo(t, cfg)
	checkVerdict(t, cfg, sum)
	checkNarration(t, text,
		"5 real Redis servers (-redis), quorum 3",
		"real servers: skipping the node kills and restarts",
	)
	for _, unwanted := range []string{"stopped answering", "killed node", "restarted node", "✗ no quorum"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("output has %q, with every server up throughout", unwanted)
		}
	}
}

// runDemo runs the demo as cfg says, logs its output and returns its
// summary and output.
func runDemo(t *testing.T, cfg config) (summary, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	sum, err := run(ctx, cfg, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return sum, out.String()
}

// checkVerdict checks the demo's verification: no tick twice, none missed
// while a quorum was up, fences in order, enough ticks checked, and the
// stalled replica's lease lost.
func checkVerdict(t *testing.T, cfg config, sum summary) {
	t.Helper()
	if sum.runs == 0 {
		t.Error("nothing ran")
	}
	if sum.duplicates != 0 {
		t.Errorf("%d duplicate runs: %v", sum.duplicates, sum.dupList)
	}
	if sum.misses != 0 {
		var lines []string
		for _, m := range sum.missList {
			lines = append(lines, m.line)
		}
		t.Errorf("%d misses, %d of them split votes (every replica refused as if another held the lock, none ran the tick):\n%s",
			sum.misses, sum.splitVotes, strings.Join(lines, "\n"))
	}
	if !sum.fencesOK {
		t.Errorf("fences not monotonic: %v", sum.fenceErrs)
	}
	if !sum.ok() {
		t.Error("summary is not ok")
	}
	// The window must leave ticks to check once the faults' margins are
	// taken out, or "no miss" would mean nothing.
	if checked := sum.due - notChecked(sum); checked < 3*cfg.jobs {
		t.Errorf("only %d ticks checked for misses", checked)
	}
	if len(sum.leasesLost) == 0 {
		t.Error("no lease was lost, though a replica was stalled during a slow run")
	}
}

// checkNarration checks that the output has the stall's narration and the
// verdict, and every string in want.
func checkNarration(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range append(want,
		"stalled r",
		"context.Cause is mutex.ErrLost",
		"another replica ran the next tick",
		"resumed r",
		"PASS:",
	) {
		if !strings.Contains(text, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// waitUptime waits until every server of c reports an uptime of at least d
// (INFO's whole seconds, read with store.Node.Info), failing the test after
// 10 s more.
func waitUptime(t *testing.T, c *redistest.Cluster, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d + 10*time.Second)
	for _, s := range c.Nodes() {
		n, err := store.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		for {
			info, err := (*engine.Node)(n).Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info.Uptime >= d {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s up only %v after waiting for %v", s.Addr(), info.Uptime, d)
			}
			time.Sleep(100 * time.Millisecond) // uptime counts in real seconds
		}
	}
}

func notChecked(s summary) int {
	n := 0
	for _, v := range s.notChecked {
		n += v
	}
	return n
}

// TestQuietNarrator checks that -quiet silences the narration (the summary
// is written by run itself).
func TestQuietNarrator(t *testing.T) {
	var out bytes.Buffer
	n := &narrator{w: &out, quiet: true}
	n.say("something")
	n.printf("more\n")
	if out.Len() != 0 {
		t.Errorf("quiet narrator wrote %q", out.String())
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.duration != 40*time.Second || cfg.replicas != 3 || cfg.jobs != 3 || cfg.quiet || cfg.redisAddrs != nil {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = parseFlags([]string{"-redis", "a:1, b:2", "-quiet", "-replicas", "4", "-jobs", "1", "-duration", "1m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.redisAddrs) != 2 || cfg.redisAddrs[1] != "b:2" || !cfg.quiet || cfg.replicas != 4 || cfg.jobs != 1 || cfg.duration != time.Minute {
		t.Errorf("parsed: %+v", cfg)
	}

	for _, args := range [][]string{
		{"-duration", "5s"},
		{"-duration", "soon"},
		{"-replicas", "1"},
		{"-replicas", "11"},
		{"-jobs", "0"},
		{"-jobs", "11"},
		{"-redis", "localhost"},
		{"-redis", "a:1,,b:2"},
		{"-redis", ":6379"},
		{"-redis", "a:1,a:1"},
		{"-nope"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
		var stderr bytes.Buffer
		if code := realMain(args, io.Discard, &stderr); code != 2 {
			t.Errorf("%q: exit status %d, want 2", args, code)
		} else if stderr.Len() == 0 {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestPlanScales(t *testing.T) {
	for _, d := range []time.Duration{minDuration, 20 * time.Second, 40 * time.Second, 10 * time.Minute} {
		p := newPlan(d)
		steps := []time.Duration{0, p.kill2, p.kill3, p.restart, p.stall, p.resume, d}
		for i := 1; i < len(steps); i++ {
			if steps[i] <= steps[i-1] {
				t.Errorf("%v: steps out of order: %v", d, steps)
			}
		}
	}
}

// TestStatusPage runs the demo with its status page and reads the page
// while the demo runs: it lists the jobs, their runs, the five nodes and
// the replicas, and it shows the nodes the scenario kills as down.
func TestStatusPage(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags([]string{"-duration", "14s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	out := &addrWriter{found: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := run(ctx, cfg, out)
		done <- err
	}()
	var base string
	select {
	case base = <-out.found:
	case err := <-done:
		t.Fatalf("the demo ended before printing the page's address: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no status page address printed")
	}
	page := func() string {
		resp, err := http.Get(base + "?fragment=1")
		if err != nil {
			t.Fatalf("GET %s: %v", base, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var body string
	poll := func(what string, cond func(string) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; <-time.After(200 * time.Millisecond) {
			if body = page(); cond(body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page never showed %s:\n%s", what, body)
			}
		}
	}
	poll("the fleet and its runs", func(b string) bool {
		for _, want := range []string{"job-1", "job-3", `data-node="node5"`, `data-replica="r1"`, `data-replica="r3"`, ">success<"} {
			if !strings.Contains(b, want) {
				return false
			}
		}
		return true
	})
	poll("node 2 down", func(b string) bool {
		i := strings.Index(b, `data-node="node2"`)
		return i >= 0 && strings.Contains(b[i:min(len(b), i+200)], ">down<")
	})
	// A request naming another host (DNS rebinding) is refused.
	req, _ := http.NewRequest("GET", base, nil)
	req.Host = "attacker.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for another host: %v, %v; want 421", resp, err)
	} else {
		resp.Body.Close()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// addrWriter collects the demo's output and sends the status page's
// address on found when the demo prints it.
type addrWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	found chan string
	sent  bool
}

func (w *addrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := regexp.MustCompile(`status page: (http://\S+/)`).FindSubmatch(w.buf.Bytes()); m != nil && !w.sent {
		w.sent = true
		w.found <- string(m[1])
	}
	return len(p), nil
}

// String returns what the demo wrote so far.
func (w *addrWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestPageLoopbackOnly: the demo refuses to serve its page on an address
// other hosts can reach.
func TestPageLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:0"} {
		if p, err := servePage(addr, config{}, nil, true, "x", nil); err == nil {
			p.close()
			t.Errorf("servePage(%q): served", addr)
		}
	}
}

// TestHold: with -hold, the demo keeps its status page up after its
// summary, saying so, until it is interrupted; a -hold without a page is
// refused.
func TestHold(t *testing.T) {
	t.Parallel()
	if _, err := parseFlags([]string{"-hold", "-page", ""}, io.Discard); err == nil || !strings.Contains(err.Error(), "-hold") {
		t.Errorf("-hold without a page: %v, want an error naming -hold", err)
	}
	cfg, err := parseFlags([]string{"-duration", minDuration.String(), "-hold"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	out := &addrWriter{found: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := run(ctx, cfg, out)
		done <- err
	}()
	var base string
	select {
	case base = <-out.found:
	case err := <-done:
		t.Fatalf("the demo ended before printing the page's address: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no status page address printed")
	}
	for deadline := time.Now().Add(minDuration + 30*time.Second); !strings.Contains(out.String(), "until Ctrl-C"); <-time.After(100 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the demo ended without holding its page: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo never said it holds its page:\n%s", out.String())
		}
	}
	// The summary's verdict is TestRun's to check; here, only that it came
	// before the hold.
	if s := out.String(); !strings.Contains(s, "\nPASS: ") && !strings.Contains(s, "\nFAIL: ") {
		t.Errorf("the page is held before the summary:\n%s", s)
	}
	resp, err := http.Get(base + "?fragment=1")
	if err != nil {
		t.Fatalf("the held page: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "job-1") {
		t.Errorf("the held page: %s\n%s", resp.Status, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the demo did not end when interrupted")
	}
}
