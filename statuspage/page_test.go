package statuspage_test

import (
	"strings"
	"testing"
	"time"
)

// TestPageShowsFleet: the main page lists the jobs with their schedules,
// their runs from the ledgers, the nodes and the replicas; its fragment is
// its live part alone; a job's page lists its history; an unknown job is
// not found.
func TestPageShowsFleet(t *testing.T) {
	t.Parallel()
	f := startFleet(t, 2)
	waitUntil(t, 15*time.Second, "3 runs of tick", func() bool { return len(f.ran("tick")) >= 3 })
	<-time.After(5100 * time.Millisecond) // the page's scan is at most 5 s old
	r := f.do(t, "GET", "/", "")
	if r.code != 200 {
		t.Fatalf("GET /: %d %s", r.code, r.body)
	}
	for _, want := range []string{`<a href="./job/tick">tick</a>`, "<code>* * * * * *</code>", "UTC", "replica-a", "replica-b",
		f.c.Addrs()[0], f.c.Addrs()[2], ">success<", "read-only"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the main page lacks %q", want)
		}
	}
	if strings.Contains(r.body, `method="post"`) || !strings.Contains(r.body, `<form class="actions" method="get"`) {
		t.Error("a read-only page shows actions, or no search")
	}
	frag := f.do(t, "GET", "/?fragment=1", "")
	if frag.code != 200 || strings.Contains(frag.body, "<html") || !strings.Contains(frag.body, `id="jobs"`) {
		t.Errorf("fragment: %d %.300s", frag.code, frag.body)
	}
	job := f.do(t, "GET", "/job/tick", "")
	if job.code != 200 || strings.Count(job.body, `<tr class="run">`) < 3 || !strings.Contains(job.body, `href="../"`) {
		t.Errorf("job page: %d %s", job.code, job.body)
	}
	if r := f.do(t, "GET", "/job/nope", ""); r.code != 404 {
		t.Errorf("unknown job: %d", r.code)
	}
}
