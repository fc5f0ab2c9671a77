package statuspage_test

import (
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/statuspage"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// TestActions: an authorized operator pauses a job (every node has the
// pause key, the page says paused, the history names the operator),
// resumes it and triggers it (one replica of two runs it once); each
// action answers 303 back to the job's page. The page offers pause or
// resume by the job's state, not both.
func TestActions(t *testing.T) {
	t.Parallel()
	f := startFleet(t, 2, statuspage.WithAuthorize(basicAuth))
	if r := f.do(t, "GET", "/job/report", "ann"); r.code != 200 || !strings.Contains(r.body, "acting as <b>ann</b>") ||
		!hasButtons(r.body, "pause", "trigger") {
		t.Fatalf("an operator's job page, the job active: %d %s", r.code, r.body)
	}
	r := f.do(t, "POST", "/job/report/pause", "ann")
	if r.code != 303 || resolve(t, "/job/report/pause", r.location) != "/job/report?done=paused" {
		t.Fatalf("pause: %d %q %s", r.code, r.location, r.body)
	}
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("report")
	for i, on := range f.c.KeyOn(t, lk.Pause) {
		if !on {
			t.Errorf("node %d lacks the pause key", i)
		}
	}
	page := f.do(t, "GET", "/job/report?done=paused", "ann")
	if !hasButtons(page.body, "resume", "trigger") {
		t.Errorf("the job's page after the pause offers %v; want resume and trigger", buttons(page.body))
	}
	for _, want := range []string{"paused 3/3", "Paused: no replica runs", "paused by operator", "<td>ann</td>"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the job's page after the pause lacks %q", want)
		}
	}
	if r := f.do(t, "POST", "/job/report/resume", "ann"); r.code != 303 {
		t.Fatalf("resume: %d %s", r.code, r.body)
	}
	if on := f.c.KeyOn(t, lk.Pause); on[0] || on[1] || on[2] {
		t.Errorf("pause key left after the resume: %v", on)
	}
	if r := f.do(t, "GET", "/job/report?done=resumed", "ann"); !hasButtons(r.body, "pause", "trigger") {
		t.Errorf("the job's page after the resume offers %v; want pause and trigger", buttons(r.body))
	}
	if r := f.do(t, "POST", "/job/report/trigger", "bob"); r.code != 303 || !strings.HasSuffix(r.location, "done=triggered") {
		t.Fatalf("trigger: %d %q %s", r.code, r.location, r.body)
	}
	<-time.After(1500 * time.Millisecond) // room for a second run of the request, which must not come
	if runs := f.ran("report"); len(runs) != 1 || !runs[0].Tick.IsZero() {
		t.Errorf("runs of report after the trigger: %+v; want one manual run", runs)
	}
	hist := f.do(t, "GET", "/job/report", "ann").body
	for _, want := range []string{"triggered by operator", "<td>bob</td>", "resumed by operator", "manual "} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q", want)
		}
	}
	if r := f.do(t, "POST", "/job/nope/pause", "ann"); r.code != 404 {
		t.Errorf("pause of an unknown job: %d", r.code)
	}
	if r := f.do(t, "POST", "/job/report/explode", "ann"); r.code != 404 {
		t.Errorf("an unknown action: %d", r.code)
	}
}

// buttons returns the values of the buttons of body's forms, in order.
func buttons(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<button type="submit" name="do" value="(\w+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// hasButtons reports whether body's forms are the buttons want, in order.
func hasButtons(body string, want ...string) bool {
	return slices.Equal(buttons(body), want) && strings.Count(body, "<form") == len(want)
}

// TestRefusals: without authorization, with a wrong token, or on a page
// without a hook, an action is refused (403) and shows no button; a
// cross-origin request is refused even with the token.
func TestRefusals(t *testing.T) {
	t.Parallel()
	f := startFleet(t, 1, statuspage.WithAuthorize(basicAuth))
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("report")
	paused := func() bool { on := f.c.KeyOn(t, lk.Pause); return on[0] || on[1] || on[2] }
	if r := f.do(t, "GET", "/job/report", ""); r.code != 200 || strings.Contains(r.body, "<form") || !strings.Contains(r.body, "read-only") {
		t.Errorf("an anonymous job page: %d, forms %d", r.code, strings.Count(r.body, "<form"))
	}
	for _, path := range []string{"/job/report/pause", "/job/report/trigger", "/leaks/fix"} {
		if r := f.do(t, "POST", path, ""); r.code != 403 || !strings.Contains(r.body, "Not authorized") {
			t.Errorf("anonymous POST %s: %d %s", path, r.code, r.body)
		}
	}
	if r := f.do(t, "POST", "/job/report/pause", "ann", "Authorization", "Basic YW5uOndyb25n"); r.code != 403 {
		t.Errorf("POST with a wrong token: %d", r.code)
	}
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Origin", "http://evil.example"}} {
		if r := f.do(t, "POST", "/job/report/pause", "ann", h...); r.code != 403 || !strings.Contains(r.body, "another site") {
			t.Errorf("cross-origin POST (%v): %d %s", h, r.code, r.body)
		}
	}
	if paused() {
		t.Fatal("a refused request paused the job")
	}
	if r := f.do(t, "POST", "/job/report/pause", "ann", "Sec-Fetch-Site", "same-origin"); r.code != 303 || !paused() {
		t.Errorf("same-origin POST with the token: %d %s", r.code, r.body)
	}

	ro, err := f.replicas[0].StatusPage() // no hook: read-only
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "/job/report/resume", nil)
	req.SetBasicAuth("ann", token)
	w := newRecorder()
	ro.ServeHTTP(w, req)
	if w.code != 403 || !paused() {
		t.Errorf("a read-only page: resume answered %d", w.code)
	}
}

// TestNodesAndSecrets: a node down shows down with its last error, one
// whose server refuses our password shows refused, with the server's
// words; a node named by a URL with a password shows as host:port; no
// password of the clients' appears on the page.
func TestNodesAndSecrets(t *testing.T) {
	t.Parallel()
	redistest.QuietClients()
	c := redistest.Start(t, 3)
	locked := c.Node(2)
	if err := locked.Client(t).ConfigSet(context.Background(), "requirepass", "s3cret-right").Err(); err != nil {
		t.Fatal(err)
	}
	var nodes []*store.Node
	for i, s := range c.Nodes() {
		name := s.Addr()
		if i == 1 {
			name = "redis://admin:hunter2@" + s.Addr() + "/0"
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: []string{"", "hunter2", "wr0ng-pass"}[i], MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		n, err := store.NewNode(name, cl)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	locks, err := mutex.New(nodes, mutex.WithTrustedNodes())
	if err != nil {
		t.Fatal(err)
	}
	page, err := statuspage.New(locks)
	if err != nil {
		t.Fatal(err)
	}
	c.Node(0).Kill()
	req, _ := http.NewRequest("GET", "/", nil)
	w := newRecorder()
	page.ServeHTTP(w, req)
	body := w.body.String()
	for _, secret := range []string{"hunter2", "wr0ng-pass", "admin:", "redis://"} {
		if strings.Contains(body, secret) {
			t.Errorf("the page shows %q", secret)
		}
	}
	for i, want := range []string{"down", "up", "refused"} {
		row := rowOf(body, `data-node="`+c.Node(i).Addr()+`"`)
		if !strings.Contains(row, ">"+want+"<") {
			t.Errorf("node %d: row %q; want %s", i, row, want)
		}
	}
	if row := rowOf(body, `data-node="`+c.Node(0).Addr()+`"`); !strings.Contains(row, "connection refused") {
		t.Errorf("the down node's row %q does not say why", row)
	}
	if row := rowOf(body, `data-node="`+c.Node(2).Addr()+`"`); !strings.Contains(row, "WRONGPASS") {
		t.Errorf("the refusing node's row %q does not say why", row)
	}
}

// TestOptions: bad options are refused with errors that match
// mutex.ErrInvalidOption, through the front door too.
func TestOptions(t *testing.T) {
	if _, err := statuspage.New(nil); !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("New(nil): %v", err)
	}
	s, err := redcron.New([]string{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	for _, o := range []statuspage.Option{nil, statuspage.WithAuthorize(nil), statuspage.WithLogger(nil), statuspage.WithJobs(nil)} {
		if _, err := s.StatusPage(o); !errors.Is(err, mutex.ErrInvalidOption) || !errors.Is(err, mutex.ErrInvalidOption) {
			t.Errorf("StatusPage(bad option): %v", err)
		}
	}
}

// rowOf returns the table row of body whose opening tag has attr.
func rowOf(body, attr string) string {
	i := strings.Index(body, attr)
	if i < 0 {
		return ""
	}
	end := strings.Index(body[i:], "</tr>")
	if end < 0 {
		return body[i:]
	}
	return body[i : i+end]
}

// TestFixLeaks: the main page lists a leaked lock by class and offers the
// fix; the fix deletes it on every node, and the job's history says who
// fixed what.
func TestFixLeaks(t *testing.T) {
	t.Parallel()
	f := startFleet(t, 1, statuspage.WithAuthorize(basicAuth))
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("sweep")
	orphan := engine.Value{Token: engine.NewToken(), Acquired: time.Now().Add(-time.Hour), Owner: "gone"}.String()
	for _, s := range f.c.Nodes() {
		s.Client(t).Set(context.Background(), lk.Lock, orphan, 0)
	}
	<-time.After(5100 * time.Millisecond) // the page's scan is at most 5 s old
	main := f.do(t, "GET", "/", "ann").body
	if !strings.Contains(rowOf(main, "<td>sweep</td>"), "no_expiry, orphaned") || !strings.Contains(main, "orphaned 1") ||
		!strings.Contains(main, `action="./leaks/fix"`) {
		t.Fatalf("the main page does not offer to fix the orphaned lock:\n%s", main)
	}
	r := f.do(t, "POST", "/leaks/fix", "ann")
	if r.code != 303 || resolve(t, "/leaks/fix", r.location) != "/?done=leaks_fixed" {
		t.Fatalf("fix: %d %q %s", r.code, r.location, r.body)
	}
	for i, on := range f.c.KeyOn(t, lk.Lock) {
		if on {
			t.Errorf("node %d still has the orphaned lock", i)
		}
	}
	hist := f.do(t, "GET", "/job/sweep", "ann").body
	if !strings.Contains(hist, "leaks_fixed by operator") || !strings.Contains(hist, "orphaned") {
		t.Errorf("the job's history lacks the fix:\n%s", hist)
	}
}

// TestJobNames: a job whose name has a slash, a space or is a dot has
// its own page, linked from the main page.
func TestJobNames(t *testing.T) {
	t.Parallel()
	redistest.QuietClients()
	c := redistest.Start(t, 1)
	n, err := store.NewNode(c.Node(0).Addr(), c.Node(0).Client(t))
	if err != nil {
		t.Fatal(err)
	}
	locks, err := mutex.New([]*store.Node{n}, mutex.WithTrustedNodes())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"team/nightly report", ".", "ünïcode?&", "http:foo", "billing:nightly"}
	page, err := statuspage.New(locks, statuspage.WithJobs(func() []scheduler.Entry {
		var out []scheduler.Entry
		for _, name := range names {
			out = append(out, scheduler.Entry{Name: name, Spec: "@hourly", Location: time.UTC})
		}
		return out
	}), statuspage.WithAuthorize(func(*http.Request) (string, bool) { return "ann", true }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/p", page))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, main := get("/p/")
	if code != 200 {
		t.Fatalf("main page: %d", code)
	}
	for _, name := range names {
		link := regexp.MustCompile(`href="(\./job/[^"]*)">` + regexp.QuoteMeta(html.EscapeString(name)) + `<`).FindStringSubmatch(main)
		if link == nil {
			t.Errorf("no link to %q on the main page", name)
			continue
		}
		u, _ := url.Parse(srv.URL + "/p/")
		target, _ := u.Parse(html.UnescapeString(link[1]))
		code, body := get(target.RequestURI())
		if code != 200 || !strings.Contains(body, "@hourly") {
			t.Errorf("the page of %q at %s: %d", name, target.RequestURI(), code)
			continue
		}
		// Its pause button posts to its own page: not to a URL scheme
		// ("http:foo"), nor to another job.
		action := regexp.MustCompile(`action="([^"]*)"><button[^>]*value="pause"`).FindStringSubmatch(body)
		if action == nil {
			t.Errorf("no pause form on the page of %q", name)
			continue
		}
		post, err := target.Parse(html.UnescapeString(action[1]))
		if err != nil || post.Host != target.Host || post.EscapedPath() != target.EscapedPath()+"/pause" {
			t.Errorf("the pause form of %q posts to %v (%v); want %s/pause", name, post, err, target.EscapedPath())
		}
	}
}

// TestTagActions: a search for a tag offers actions on every job tagged
// with it; an operator pauses them (every node has the pause key of the
// tagged job, the other job is untouched) and resumes them, each answered
// 303 back to the search; an unknown tag is 404; a request without an
// operator is refused.
func TestTagActions(t *testing.T) {
	t.Parallel()
	f := startFleet(t, 2, statuspage.WithAuthorize(basicAuth))
	keys, _ := engine.NewKeyspace("")
	report, _ := keys.Lock("report")
	tick, _ := keys.Lock("tick")
	deadline := time.Now().Add(10 * time.Second)
	for { // the replicas publish their job tables on their own schedule
		r := f.do(t, "GET", "/?q=report-tag", "ann")
		if strings.Contains(r.body, `formaction="./tag/report-tag/pause"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a search for the tag offers no action on its jobs: %s", r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := f.do(t, "POST", "/tag/report-tag/pause", ""); r.code == 303 {
		t.Fatalf("a pause by tag without an operator: %d %q", r.code, r.location)
	}
	r := f.do(t, "POST", "/tag/report-tag/pause", "ann")
	if r.code != 303 || resolve(t, "/tag/report-tag/pause", r.location) != "/?q=report-tag&done=paused" {
		t.Fatalf("pause by tag: %d %q %s", r.code, r.location, r.body)
	}
	for i, on := range f.c.KeyOn(t, report.Pause) {
		if !on {
			t.Errorf("node %d lacks the tagged job's pause key", i)
		}
	}
	for i, on := range f.c.KeyOn(t, tick.Pause) {
		if on {
			t.Errorf("node %d has the pause key of a job without the tag", i)
		}
	}
	if r := f.do(t, "POST", "/tag/report-tag/resume", "ann"); r.code != 303 {
		t.Fatalf("resume by tag: %d %s", r.code, r.body)
	}
	if on := f.c.KeyOn(t, report.Pause); on[0] || on[1] || on[2] {
		t.Errorf("pause key left after the resume by tag: %v", on)
	}
	if r := f.do(t, "POST", "/tag/no-such-tag/pause", "ann"); r.code != 404 {
		t.Errorf("an unknown tag: %d, want 404", r.code)
	}
}
