package statuspage_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/statuspage"
	"github.com/redcron/redcron/store"
)

// token is the admin token of the tests' pages.
const token = "t0ken"

// fleet is replicas over real Redis servers, each with the jobs "tick"
// (every second) and "report" (never due), and the status page of the
// first, mounted at /redcron/ of a test server.
type fleet struct {
	c        *redistest.Cluster
	replicas []*redcron.Scheduler
	srv      *httptest.Server
	mu       sync.Mutex
	runs     map[string][]scheduler.RunInfo // by job
}

// startFleet starts n replicas over three trusted nodes, and the page.
func startFleet(t *testing.T, n int, opts ...statuspage.Option) *fleet {
	t.Helper()
	redistest.QuietClients()
	return startFleetOn(t, redistest.Start(t, 3), []mutex.Option{mutex.WithTrustedNodes()}, n, opts...)
}

// redlockOn returns a Redlock over c's nodes with opts.
func redlockOn(t *testing.T, c *redistest.Cluster, opts ...mutex.Option) *mutex.Redlock {
	t.Helper()
	var nodes []*store.Node
	for _, s := range c.Nodes() {
		n, err := store.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	locks, err := mutex.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return locks
}

// startFleetOn starts n replicas over c's nodes, with the Redlock options
// lockOpts, and the page.
func startFleetOn(t *testing.T, c *redistest.Cluster, lockOpts []mutex.Option, n int, opts ...statuspage.Option) *fleet {
	t.Helper()
	f := &fleet{c: c, runs: map[string][]scheduler.RunInfo{}}
	for i := range n {
		s, err := redcron.New(f.c.Addrs(), redcron.WithLockOptions(lockOpts...),
			redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID("replica-"+string(rune('a'+i)))))
		if err != nil {
			t.Fatal(err)
		}
		for name, spec := range map[string]string{"tick": "* * * * * *", "report": "0 0 0 1 1 *"} {
			if err := s.Add(name, spec, f.job(name), scheduler.WithLockTTL(2*time.Second), scheduler.WithTags(name+"-tag")); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(context.Background()) }()
		t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
		f.replicas = append(f.replicas, s)
	}
	page, err := f.replicas[0].StatusPage(opts...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/redcron/", http.StripPrefix("/redcron", page))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// job returns a job that records its runs.
func (f *fleet) job(name string) scheduler.JobFunc {
	return func(_ context.Context, run scheduler.RunInfo) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.runs[name] = append(f.runs[name], run)
		return nil
	}
}

// ran returns the runs of a job so far.
func (f *fleet) ran(name string) []scheduler.RunInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]scheduler.RunInfo(nil), f.runs[name]...)
}

// basicAuth is the authorization hook of the tests: the token as the
// basic-auth password, the user as who.
func basicAuth(r *http.Request) (string, bool) {
	user, password, ok := r.BasicAuth()
	return user, ok && password == token
}

// response is a page's answer.
type response struct {
	code     int
	body     string
	location string
}

// do sends a request to the fleet's page at path (under /redcron), as
// user (with the token; "" for none), with the headers given in pairs.
func (f *fleet) do(t *testing.T, method, path, user string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+"/redcron"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, string(b), resp.Header.Get("Location")}
}

// resolve returns the absolute path a relative Location leads to from path.
func resolve(t *testing.T, path, location string) string {
	t.Helper()
	base, _ := url.Parse("http://x/redcron" + path)
	u, err := base.Parse(location)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.RequestURI(), "/redcron")
}

// waitUntil polls cond every 50 ms until it holds, or fails the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, d)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// recorder is a minimal http.ResponseWriter for handlers called directly.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func newRecorder() *recorder { return &recorder{header: http.Header{}, code: 200} }

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }
