package statuspage

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// oddName is a job name with what HTML and URLs make special.
const oddName = `a<b>&"c'/x:y.z ü`

// bigPage returns a page of 250 jobs of this replica's (oddName and
// job-000 to job-248) and 150 names no live replica publishes (old-000
// to old-149), from a scan it holds as fresh: its views do no I/O.
func bigPage(t *testing.T) *statusPage {
	t.Helper()
	redistest.QuietClients() // its nodes are never up
	var nodes []*store.Node
	for i := range 3 {
		addr := fmt.Sprintf("127.0.0.1:%d", 1+i) // never dialled
		n, err := store.NewNode(addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond}))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	locks, err := mutex.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	entries := []scheduler.Entry{{Name: oddName, Spec: "@hourly", Location: time.UTC}}
	for i := range 249 {
		entries = append(entries, scheduler.Entry{Name: fmt.Sprintf("job-%03d", i), Spec: "@daily", Location: time.UTC})
	}
	h, err := New(locks, WithJobs(func() []scheduler.Entry { return entries }))
	if err != nil {
		t.Fatal(err)
	}
	p := h.(*statusPage)
	st := &admin.Status{Quorum: len(nodes)/2 + 1}
	for i := range nodes {
		st.Nodes = append(st.Nodes, admin.Node{Name: fmt.Sprintf("127.0.0.1:%d", 1+i), State: "up", Latency: time.Millisecond, Uptime: time.Hour})
	}
	for i := range 150 {
		st.Jobs = append(st.Jobs, admin.Job{Name: fmt.Sprintf("old-%03d", i)})
	}
	p.last, p.lastAt = &snapshot{Status: st, At: time.Now(), scanned: true}, time.Now().Add(time.Hour) // fresh for the test's length
	return p
}

// get returns the body of the page's answer to GET target.
func get(t *testing.T, p *statusPage, target string) string {
	t.Helper()
	req, err := http.NewRequest("GET", target, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &bodyRecorder{header: http.Header{}, code: 200}
	p.ServeHTTP(w, req)
	if w.code != 200 {
		t.Fatalf("GET %s: %d %s", target, w.code, w.body.String())
	}
	return w.body.String()
}

// bodyRecorder is a minimal http.ResponseWriter.
type bodyRecorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *bodyRecorder) Header() http.Header         { return r.header }
func (r *bodyRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *bodyRecorder) WriteHeader(code int)        { r.code = code }

// rows returns the names of the jobs' rows of a body, in order.
func rows(body string) []string {
	var out []string
	for _, part := range strings.Split(body, `<tr data-job="`)[1:] {
		out = append(out, part[:strings.Index(part, `"`)])
	}
	return out
}

// TestPagination: of 250 jobs, the main page shows 100 at a time, by name,
// with links to the previous and next pages and where they stand; a page
// past the end shows the last, a bad one the first; the names no live
// replica publishes are cut at 100, with how many more there are; the
// runs read are those of the jobs shown alone.
func TestPagination(t *testing.T) {
	p := bigPage(t)
	first := get(t, p, "/")
	if r := rows(first); len(r) != 100 || r[0] != "a&lt;b&gt;&amp;&#34;c&#39;/x:y.z ü" || r[1] != "job-000" || r[99] != "job-098" {
		t.Fatalf("page 1: %d rows, %q", len(r), r[:min(3, len(r))])
	}
	for _, want := range []string{"250 jobs; jobs 1-100", "from the ledgers, of the jobs shown", "page 1 of 3", `<a rel="next" href="?page=2">`, `data-fragment="?fragment=1"`} {
		if !strings.Contains(first, want) {
			t.Errorf("page 1 lacks %q", want)
		}
	}
	if strings.Contains(first, `rel="prev"`) {
		t.Error("page 1 links to a previous page")
	}
	if n := strings.Count(first, `data-unpublished="`); n != 100 || !strings.Contains(first, "and 50 more") {
		t.Errorf("unpublished: %d rows listed; want 100, and 50 more", n)
	}
	for _, target := range []string{"/?page=3", "/?page=99"} {
		last := get(t, p, target)
		if r := rows(last); len(r) != 50 || r[0] != "job-199" || r[49] != "job-248" {
			t.Errorf("%s: %d rows, %q; want job-199 to job-248", target, len(r), r[:min(3, len(r))])
		}
		for _, want := range []string{"jobs 201-250", "page 3 of 3", `<a rel="prev" href="?page=2">`, `data-fragment="?fragment=1&amp;page=3"`} {
			if !strings.Contains(last, want) {
				t.Errorf("%s lacks %q", target, want)
			}
		}
		if strings.Contains(last, `rel="next"`) {
			t.Errorf("%s links to a next page", target)
		}
	}
	p.last.runs = nil
	get(t, p, "/?page=3")
	if n := len(p.last.runs); n != 50+100 {
		t.Errorf("page 3 read the runs of %d jobs; want its 50 and the 100 unpublished names listed", n)
	}
	if _, ok := p.last.runs["job-000"]; ok {
		t.Error("page 3 read the runs of job-000, of page 1")
	}
	if r := rows(get(t, p, "/?page=x")); len(r) != 100 || r[1] != "job-000" {
		t.Errorf("?page=x: %d rows; want page 1", len(r))
	}
	if r := rows(get(t, p, "/?page=2&fragment=1")); len(r) != 100 || r[0] != "job-099" {
		t.Errorf("page 2's live part: %d rows, from %q; want 100 from job-099", len(r), r[:min(1, len(r))])
	}
}

// TestSearch: ?q= keeps the jobs whose name (or spec) holds it, whatever
// the case, paginated and counted; the live part's query keeps the page
// and the search; a search of the characters HTML makes special finds
// the name with them, escaped everywhere.
func TestSearch(t *testing.T) {
	p := bigPage(t)
	body := get(t, p, "/?q=JOB-01")
	if r := rows(body); len(r) != 10 || r[0] != "job-010" || r[9] != "job-019" {
		t.Errorf("?q=JOB-01: %d rows, %q", len(r), r[:min(3, len(r))])
	}
	if !strings.Contains(body, "10 of 250 jobs match") || strings.Contains(body, `rel="next"`) {
		t.Errorf("?q=JOB-01: no count of the matches, or a next page")
	}
	if r := rows(get(t, p, "/?q=hourly")); len(r) != 1 {
		t.Errorf("?q=hourly (a spec): %q; want the one job", r)
	}
	if r := rows(get(t, p, "/?q=nothing+like+it")); len(r) != 0 {
		t.Errorf("?q=nothing like it: %q", r)
	}

	body = get(t, p, "/?page=2&q=job")
	if r := rows(body); len(r) != 100 || r[0] != "job-100" {
		t.Errorf("page 2 of ?q=job: %d rows, from %q", len(r), r[:min(1, len(r))])
	}
	const frag = "?fragment=1&page=2&q=job"
	for _, want := range []string{"249 of 250 jobs match", `data-fragment="` + strings.ReplaceAll(frag, "&", "&amp;") + `"`,
		`href="?page=3&amp;q=job"`, `href="?q=job"`, "live.dataset.fragment"} {
		if !strings.Contains(body, want) {
			t.Errorf("page 2 of ?q=job lacks %q", want)
		}
	}
	live := get(t, p, "/"+frag)
	if r := rows(live); strings.Contains(live, "<html") || len(r) != 100 || r[0] != "job-100" || !strings.Contains(live, "249 of 250 jobs match") {
		t.Errorf("the live part of page 2 of ?q=job: %d rows, from %q", len(r), r[:min(1, len(r))])
	}

	odd := get(t, p, "/?q="+url.QueryEscape(`<B>&"C'`))
	if r := rows(odd); len(r) != 1 || !strings.Contains(odd, "1 of 250 jobs match") {
		t.Errorf("a search of %q: %q", `<B>&"C'`, r)
	}
	if strings.Contains(odd, `<b>`) || strings.Contains(odd, `<B>`) || !strings.Contains(odd, `value="&lt;B&gt;&amp;&#34;C&#39;"`) ||
		!strings.Contains(odd, `>a&lt;b&gt;&amp;&#34;c&#39;/x:y.z ü</a>`) || !strings.Contains(odd, `href="./job/a%3Cb%3E&amp;%22c%27%2Fx%3Ay.z%20%C3%BC"`) {
		t.Errorf("the odd name, or the search, is not escaped:\n%s", odd)
	}
	if n := strings.Count(get(t, p, "/?q=old-14"), `data-unpublished="`); n != 10 {
		t.Errorf("?q=old-14: %d unpublished names; want 10", n)
	}
}

// TestSearchTag: a job's tags are shown in its row, and ?q= finds the
// jobs one of whose tags holds it.
func TestSearchTag(t *testing.T) {
	p := bigPage(t)
	entries := p.cfg.jobs()
	entries[3].Tags = []string{"nightly-reports", "team-data"}
	entries[7].Tags = []string{"reports"}
	p.cfg.jobs = func() []scheduler.Entry { return entries }
	body := get(t, p, "/?q=Reports")
	if r := rows(body); len(r) != 2 || r[0] != entries[3].Name || r[1] != entries[7].Name {
		t.Errorf("?q=Reports: %q; want the two jobs tagged with it", r)
	}
	if !strings.Contains(body, `<span class="tag">nightly-reports</span> <span class="tag">team-data</span>`) {
		t.Errorf("?q=Reports: the tags are not shown:\n%s", body)
	}
}

// TestShowsLimit: a job with a cluster limit shows it, with the permits
// held now, beside its tags: on the main page and on the job's own.
func TestShowsLimit(t *testing.T) {
	p := bigPage(t)
	name := p.cfg.jobs()[5].Name
	p.last.Status.Jobs = append(p.last.Status.Jobs, admin.Job{Name: name, Spec: "@daily", Publishers: 1,
		Limit: "reports", Permits: 2, PermitsHeld: 1})
	want := `<span class="tag" title="cluster limit: permits held now">limit reports 1/2</span>`
	if body := get(t, p, "/?q="+name); !strings.Contains(body, want) {
		t.Errorf("main page: the limit is not shown:\n%s", body)
	}
	if body := get(t, p, "/"+jobLink(name)); !strings.Contains(body, want) {
		t.Errorf("job page: the limit is not shown:\n%s", body)
	}
}

// TestShowsOnceDone: a one-time job whose tick ran shows done, on the
// main page and its own; one whose tick is recorded missed, or started on
// fewer than a quorum of the nodes, does not.
func TestShowsOnceDone(t *testing.T) {
	for _, c := range []struct {
		state string
		nodes int // of 3
		done  bool
	}{{"released", 1, true}, {"started", 2, true}, {"started", 1, false}, {"missed", 3, false}} {
		p := bigPage(t)
		const name, spec = "launch", "@at 2026-11-28T09:00:00Z"
		tick := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
		p.last.Status.Jobs = append(p.last.Status.Jobs, admin.Job{Name: name, Spec: spec, Publishers: 1})
		p.last.runs = map[string][]admin.Record{name: {{Job: name, State: c.state, Tick: tick, Start: tick, Nodes: c.nodes}}}
		want := `title="a one-time job whose tick ran: it runs no more">done</span>`
		for _, target := range []string{"/?q=" + name, "/" + jobLink(name)} {
			if body := get(t, p, target); strings.Contains(body, want) != c.done {
				t.Errorf("%s, its tick's record %s on %d nodes: done shown %v, want %v:\n%s", target, c.state, c.nodes, !c.done, c.done, body)
			}
		}
	}
}
