package statuspage_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/statuspage"
)

// TestJobsSkipsAndSignIn, over one replica of the jobs tick and report:
// a name the nodes know only from a pause key or a ledger is not listed as
// a job but apart, as not published by any live replica, and only a
// resume of it is let through; the ticks the replicas report skipped are
// listed with their reasons; a page with a hook has a sign-in link, which
// challenges a browser for credentials; fences and long names are cut,
// whole on hover.
func TestJobsSkipsAndSignIn(t *testing.T) {
	t.Parallel()
	f := startFleet(t, 1, statuspage.WithAuthorize(basicAuth))
	keys, _ := engine.NewKeyspace("")
	ghost, _ := keys.Lock("ghost")
	gone, _ := keys.Lock("gone")
	ctx := context.Background()
	for _, s := range f.c.Nodes() {
		n, _ := engine.NewNode(s.Addr(), s.Client(t))
		if err := n.Client().Set(ctx, ghost.Pause, "1|ann", 0).Err(); err != nil {
			t.Fatal(err)
		}
		old := engine.Record{Owner: "replica-z", Tick: time.Now().Add(-time.Hour).UnixMilli(), Fence: 7, Result: "success"}
		if err := n.AddMissed(ctx, gone, old, 100, 24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}

	waitUntil(t, 15*time.Second, "2 runs of tick", func() bool { return len(f.ran("tick")) >= 2 })

	t.Run("names no live replica publishes are no jobs", func(t *testing.T) {
		var main string
		waitUntil(t, 15*time.Second, "the main page with tick and ghost", func() bool {
			main = f.do(t, "GET", "/", "ann").body
			return strings.Contains(main, `data-job="tick"`) && strings.Contains(main, `data-unpublished="ghost"`)
		})
		for _, name := range []string{"ghost", "gone"} {
			if strings.Contains(main, `data-job="`+name+`"`) || !strings.Contains(main, `data-unpublished="`+name+`"`) {
				t.Errorf("%s: listed as a job, or not apart as unpublished", name)
			}
		}
		if !strings.Contains(main, `data-job="report"`) || !strings.Contains(main, "Not published by any live replica") {
			t.Errorf("the main page lacks report, or the unpublished names' heading")
		}
		page := f.do(t, "GET", "/job/ghost", "ann")
		if page.code != 200 || !strings.Contains(page.body, "No live replica publishes ghost") || !hasButtons(page.body, "resume") {
			t.Errorf("ghost's page: %d, buttons %v: %s", page.code, buttons(page.body), page.body)
		}
		for _, path := range []string{"/job/ghost/pause", "/job/ghost/trigger", "/job/gone/trigger", "/job/gone/resume"} {
			if r := f.do(t, "POST", path, "ann"); r.code != 404 || !strings.Contains(r.body, "publishes it") {
				t.Errorf("POST %s: %d; want 404, no such job", path, r.code)
			}
		}
		if r := f.do(t, "POST", "/job/ghost/resume", "ann"); r.code != 303 {
			t.Errorf("resume of ghost's pause: %d %s", r.code, r.body)
		}
		if on := f.c.KeyOn(t, ghost.Pause); on[0] || on[1] || on[2] {
			t.Errorf("ghost's pause left after its resume: %v", on)
		}
	})

	t.Run("skipped ticks, with their reasons", func(t *testing.T) {
		if r := f.do(t, "POST", "/job/tick/pause", "ann"); r.code != 303 {
			t.Fatalf("pause: %d %s", r.code, r.body)
		}
		var row string
		waitUntil(t, 20*time.Second, "a skip of tick, paused, on the main page", func() bool {
			row = rowOf(f.do(t, "GET", "/", "").body, `data-skip="tick"`)
			return strings.Contains(row, ">paused<")
		})
		if !strings.Contains(row, "replica-a") || !strings.Contains(row, `title="the job is paused cluster-wide"`) {
			t.Errorf("the skip's row %q lacks the replica or the reason's meaning", row)
		}
		if job := f.do(t, "GET", "/job/tick", "").body; !strings.Contains(rowOf(job, `data-skip="tick"`), ">paused<") {
			t.Errorf("the job's page lacks its skips")
		}
	})

	t.Run("fences cut, whole on hover and on the job's page", func(t *testing.T) {
		main := f.do(t, "GET", "/", "").body
		m := regexp.MustCompile(`<span class="short" title="(\d{16})">…(\d{8})</span>`).FindStringSubmatch(main)
		if m == nil || !strings.HasSuffix(m[1], m[2]) {
			t.Fatalf("no fence cut on the main page: %v", m)
		}
		if job := f.do(t, "GET", "/job/tick", "").body; !strings.Contains(job, "<code>"+m[1]+"</code>") {
			t.Errorf("the job's page does not show fence %s whole", m[1])
		}
	})

	t.Run("sign in", func(t *testing.T) {
		if main := f.do(t, "GET", "/", "").body; !strings.Contains(main, `<a id="signin" href="./login">Sign in</a>`) {
			t.Errorf("an anonymous view of a page with a hook has no sign-in link")
		}
		if job := f.do(t, "GET", "/job/tick", "").body; !strings.Contains(job, `href="../login"`) {
			t.Errorf("a job's page has no sign-in link")
		}
		if main := f.do(t, "GET", "/", "ann").body; strings.Contains(main, `id="signin"`) {
			t.Errorf("a signed-in view has a sign-in link")
		}
		r := f.do(t, "GET", "/login", "")
		if r.code != http.StatusUnauthorized {
			t.Errorf("anonymous GET /login: %d; want 401", r.code)
		}
		req, _ := http.NewRequest("GET", f.srv.URL+"/redcron/login", nil)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("GET /login challenges with %q; want Basic", resp.Header.Get("WWW-Authenticate"))
		}
		if r := f.do(t, "GET", "/login", "ann"); r.code != 303 || resolve(t, "/login", r.location) != "/" {
			t.Errorf("GET /login signed in: %d %q; want 303 to the main page", r.code, r.location)
		}
		ro, err := f.replicas[0].StatusPage() // no hook: nothing to sign in to
		if err != nil {
			t.Fatal(err)
		}
		w := newRecorder()
		ro.ServeHTTP(w, httptestRequest("GET", "/"))
		if strings.Contains(w.body.String(), "Sign in") {
			t.Errorf("a page without a hook has a sign-in link")
		}
	})
}

// httptestRequest returns a request for a handler called directly.
func httptestRequest(method, path string) *http.Request {
	req, _ := http.NewRequest(method, path, nil)
	return req
}

// TestUnknownWhenNoNodeRead: with every node down, the page's headline is
// unknown, and no part of it shows none, empty or green: this replica's
// jobs are listed, their state unknown.
func TestUnknownWhenNoNodeRead(t *testing.T) {
	t.Parallel()
	redistest.QuietClients()
	c := redistest.Start(t, 3)
	locks := redlockOn(t, c, mutex.WithTrustedNodes())
	page, err := statuspage.New(locks, statuspage.WithJobs(func() []scheduler.Entry {
		return []scheduler.Entry{{Name: "nightly", Spec: "@daily", Location: time.UTC, Next: time.Now().Add(time.Hour)}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Nodes() {
		s.Kill()
	}
	w := newRecorder()
	page.ServeHTTP(w, httptestRequest("GET", "/"))
	body := w.body.String()
	if !strings.Contains(body, `class="headline unknown"`) || !strings.Contains(rowOf(body, `data-job="nightly"`), ">unknown<") {
		t.Fatalf("with every node down: want the headline unknown, and nightly's state unknown:\n%s", body)
	}
	for _, bad := range []string{`class="badge ok"`, "None", "No live replica", "No run", "0 live", ">active<", ">free<"} {
		if strings.Contains(body, bad) {
			t.Errorf("with no node read, the page shows %q", bad)
		}
	}
}

// TestWarmingNodes: nodes whose servers started before the page, fresh
// (the Redlock does not trust them), show warming up with the instant
// they vote, a minute after their start, the same in every view of one
// scan; and not as restarted, however old the scan shown.
func TestWarmingNodes(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	locks := redlockOn(t, c, mutex.WithMaxTTL(time.Minute))
	page, err := statuspage.New(locks)
	if err != nil {
		t.Fatal(err)
	}
	view := func() string {
		w := newRecorder()
		page.ServeHTTP(w, httptestRequest("GET", "/"))
		return rowOf(w.body.String(), `data-node="`+c.Node(0).Addr()+`"`)
	}
	start := time.Now()
	first := view()
	m := regexp.MustCompile(`votes from (\d\d:\d\d:\d\d)`).FindStringSubmatch(first)
	if m == nil || !strings.Contains(first, ">warming_up<") {
		t.Fatalf("a fresh node's row %q; want warming up, with when it votes", first)
	}
	votes, _ := time.Parse(time.TimeOnly, m[1])
	// A node votes from its server's start plus the max TTL and 2 s (its
	// uptime is whole seconds), shown rounded up to a second: 61 to 63 s
	// after the server's start, which came before start; and the seconds
	// shown are truncated.
	want := start.UTC().Add(time.Minute)
	if d := votes.Sub(time.Date(0, 1, 1, want.Hour(), want.Minute(), want.Second(), 0, time.UTC)); d < -2*time.Second || d > 4*time.Second {
		t.Errorf("the node votes from %s; want 0 to 4 s after %s", m[1], want.Format(time.TimeOnly))
	}
	<-time.After(4 * time.Second) // the same scan, 4 s older
	if again := view(); !strings.Contains(again, "votes from "+m[1]) || strings.Contains(again, "restarted") {
		t.Errorf("the row of the same scan 4 s later: %q; want the same instant, and no restart", again)
	}
}
