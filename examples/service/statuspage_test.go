package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/browsertest"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
	"github.com/redcron/redcron/internal/redistest"
)

// adminToken is the services' REDCRON_ADMIN_TOKEN in the tests.
const adminToken = "s3cret-token"

// TestStatusPageInBrowser drives headless Chromium against two replicas of
// the service on three real Redis servers: the page lists the jobs and
// their recent runs and refreshes itself; a pause from the page stops the
// job on both replicas and the page says so, a resume starts it again; a
// trigger from the page runs the job once; without authorization the page
// shows no action and a forged POST is refused; a cross-origin POST is
// refused. It saves a screenshot of the main page.
func TestStatusPageInBrowser(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "service")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := redistest.Start(t, 3)
	a := startService(t, bin, c.Addrs(), "replica-a", "REDCRON_ADMIN_TOKEN="+adminToken)
	b := startService(t, bin, c.Addrs(), "replica-b", "REDCRON_ADMIN_TOKEN="+adminToken)
	browser := browsertest.New(t)
	op := browsertest.Tab(t, browser, browsertest.Basic("ann", adminToken))
	anon := browsertest.Tab(t, browser, nil)
	main, job := a.base+"/redcron/", a.base+"/redcron/job/report"
	f := &pageFleet{c: c, replicas: []*replica{a, b}}

	t.Run("jobs and recent runs", func(t *testing.T) {
		browsertest.Visit(t, op, main)
		waitText(t, op, `#jobs tr[data-job="report"]`, "* * * * * *", 5*time.Second)
		waitText(t, op, `#jobs tr[data-job="batch"]`, "*/2 * * * * *", 5*time.Second)
		waitText(t, op, "#runs", "success", 15*time.Second) // the page refreshes itself
		waitText(t, op, "#replicas", "replica-b", 15*time.Second)
		for _, want := range []string{"replica-a", c.Addrs()[0], "acting as ann"} {
			if !strings.Contains(browsertest.Text(op, "body"), want) {
				t.Errorf("the main page lacks %q", want)
			}
		}
		updated := browsertest.Text(op, "#updated")
		waitFor(t, 10*time.Second, "a refresh of the live part", func() bool { return browsertest.Text(op, "#updated") != updated })
		browsertest.Screenshot(t, op, "statuspage.png")

	})

	t.Run("pause stops the job on every replica", func(t *testing.T) {
		browsertest.Visit(t, op, job)
		browsertest.Click(t, op, `button[value="pause"]`)
		waitText(t, op, ".flash", "Paused", 10*time.Second)
		waitText(t, op, "#state", "paused 3/3", 5*time.Second)
		pausedAt := time.Now()
		// The replica whose shard the job is in asks, and is refused as
		// paused; the others do not ask for its ticks (held).
		waitFor(t, 5*time.Second, "a replica skipping report as paused", func() bool {
			paused := 0
			for _, r := range f.replicas {
				switch f.lastSkip(t, r, "report") {
				case "paused":
					paused++
				case "held":
				default:
					return false
				}
			}
			return paused == 1
		})
		<-time.After(2 * time.Second)
		if n := f.scheduledRunsAfter(t, "report", pausedAt.Add(time.Second)); n != 0 {
			t.Errorf("%d ticks of report ran while it was paused", n)
		}
		browsertest.Visit(t, op, main)
		waitText(t, op, `#jobs tr[data-job="report"]`, "paused 3/3", 5*time.Second)

		browsertest.Visit(t, op, job)
		browsertest.Click(t, op, `button[value="resume"]`)
		waitText(t, op, ".flash", "Resumed", 10*time.Second)
		waitText(t, op, "#state", "active", 5*time.Second)
		resumedAt := time.Now()
		waitFor(t, 10*time.Second, "runs after the resume", func() bool { return f.scheduledRunsAfter(t, "report", resumedAt) >= 2 })
		waitText(t, op, "#history", "resumed by operator", 5*time.Second)
	})

	t.Run("trigger runs it once", func(t *testing.T) {
		browsertest.Visit(t, op, job)
		browsertest.Click(t, op, `button[value="pause"]`) // so that the trigger's is the only run
		waitText(t, op, "#state", "paused 3/3", 10*time.Second)
		before := f.manualRuns(t, "report")
		browsertest.Click(t, op, `button[value="trigger"]`)
		waitText(t, op, ".flash", "Triggered", 20*time.Second)
		waitText(t, op, "#history", "manual", 5*time.Second)
		<-time.After(2 * time.Second) // room for a second run of the request, which must not come
		if n := f.manualRuns(t, "report") - before; n != 1 {
			t.Errorf("%d manual runs after one trigger", n)
		}
		if !strings.Contains(browsertest.Text(op, "#history"), "triggered by operator") {
			t.Errorf("the history lacks the trigger: %s", browsertest.Text(op, "#history"))
		}
		browsertest.Screenshot(t, op, "statuspage-job.png")
		browsertest.Click(t, op, `button[value="resume"]`)
		waitText(t, op, "#state", "active", 10*time.Second)
	})

	t.Run("without authorization it cannot act", func(t *testing.T) {
		browsertest.Visit(t, anon, job)
		waitText(t, anon, "header", "read-only", 5*time.Second)
		if n := browsertest.Eval(anon, `String(document.querySelectorAll("form, button").length)`); n != "0" {
			t.Errorf("%s forms and buttons on a read-only page", n)
		}
		status := browsertest.Eval(anon, `fetch("report/pause", {method: "POST"}).then(r => String(r.status))`)
		if status != "403" {
			t.Errorf("a forged POST without authorization answered %q", status)
		}
		if f.paused(t, "report") {
			t.Error("a POST without authorization paused the job")
		}
		// /redcron/login challenges a browser for the token, then sends it
		// to the page.
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, password := range []string{"", "wrong", adminToken} {
			req, _ := http.NewRequest("GET", a.base+"/redcron/login", nil)
			if password != "" {
				req.SetBasicAuth("ann", password)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := map[bool]int{true: 303, false: 401}[password == adminToken]
			if resp.StatusCode != want || want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("login with password %q: %d, want %d", password, resp.StatusCode, want)
			}
		}
	})

	t.Run("a cross-origin POST is refused", func(t *testing.T) {
		// A page of another site that posts to the service: the browser
		// sends the operator's credentials with it, as it would with a
		// session of theirs.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<form method="post" action="%s/pause"></form><script>document.forms[0].submit()</script>`, job)
		}))
		defer evil.Close()
		browsertest.Visit(t, op, strings.Replace(evil.URL, "127.0.0.1", "localhost", 1))
		var at, body string
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(body, "another site"); {
			if time.Now().After(deadline) {
				t.Fatalf("no refusal of the cross-origin POST: at %s: %.300s", at, body)
			}
			<-time.After(100 * time.Millisecond)
			at, body = browsertest.Eval(op, "location.href"), browsertest.Text(op, "body")
		}
		if f.paused(t, "report") {
			t.Error("a cross-origin POST paused the job")
		}
		req, _ := http.NewRequest("POST", job+"/pause", nil)
		req.SetBasicAuth("ann", adminToken)
		req.Header.Set("Origin", "http://evil.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || f.paused(t, "report") {
			t.Errorf("a POST from another origin answered %d", resp.StatusCode)
		}
	})
}

// pageFleet is the service's replicas and their nodes, as the tests read
// them.
type pageFleet struct {
	c        *redistest.Cluster
	replicas []*replica
}

// lastSkip returns why the replica last skipped the job, by its /healthz.
func (f *pageFleet) lastSkip(t *testing.T, r *replica, name string) string {
	t.Helper()
	var h struct {
		Jobs []struct {
			Name     string `json:"name"`
			LastSkip string `json:"last_skip"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(get(t, r.base+"/healthz")), &h); err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	for _, j := range h.Jobs {
		if j.Name == name {
			return j.LastSkip
		}
	}
	return ""
}

// history returns the job's ledger, merged over the nodes.
func (f *pageFleet) history(t *testing.T, name string) []ledger.Run {
	t.Helper()
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock(name)
	var nodes []*engine.Node
	for _, s := range f.c.Nodes() {
		n, _ := engine.NewNode(s.Addr(), s.Client(t))
		nodes = append(nodes, n)
	}
	runs, _ := ledger.Read(context.Background(), nodes, lk, 100)
	return runs
}

// scheduledRunsAfter counts the job's runs of ticks after t.
func (f *pageFleet) scheduledRunsAfter(t *testing.T, name string, after time.Time) int {
	n := 0
	for _, r := range f.history(t, name) {
		if r.State != ledger.StateMissed && r.State != ledger.StateOperator && r.Tick > after.UnixMilli() {
			n++
		}
	}
	return n
}

// manualRuns counts the job's runs without a tick: the triggers'.
func (f *pageFleet) manualRuns(t *testing.T, name string) int {
	n := 0
	for _, r := range f.history(t, name) {
		if r.State != ledger.StateOperator && r.Tick == 0 && r.Ticket != "" {
			n++
		}
	}
	return n
}

// paused reports whether any node has the job's pause key.
func (f *pageFleet) paused(t *testing.T, name string) bool {
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock(name)
	for _, on := range f.c.KeyOn(t, lk.Pause) {
		if on {
			return true
		}
	}
	return false
}
