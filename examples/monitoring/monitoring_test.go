package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/scheduler"
)

// promtool runs promtool with args and fails the test if it is missing or
// reports a problem.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found on PATH (%v); install it, e.g. run scripts/test, "+
			"which installs Debian's prometheus package", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestAlertRules(t *testing.T) {
	promtool(t, "check", "rules", "alerts.yml")
}

func TestAlertRulesUnitTests(t *testing.T) {
	promtool(t, "test", "rules", "alerts_test.yml")
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	return d
}

// panels returns the dashboard's panels, those of collapsed rows included.
func (d dashboard) panels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// grafanaVars are replaced in the dashboard's queries to make them PromQL.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m",
	"$__range", "1h", "${__range}", "1h",
	"${job_name}", ".*", "$job_name", ".*",
)

// TestDashboard checks the dashboard's structure and has promtool parse
// every query, as the expression of a recording rule.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels: %q %q %d", d.Title, d.UID, len(d.Panels))
	}
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	ids := map[int]bool{}
	for _, p := range d.panels() {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: bad gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: no title, no ${datasource} or no query", p.ID, p.Title)
		}
		for i, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q: target %d without expr or refId", p.Title, i)
				continue
			}
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard:panel_%d:target_%s", p.ID, tg.RefID), Expr: grafanaVars.Replace(tg.Expr)})
		}
	}
	for _, r := range rules {
		if strings.Contains(r.Expr, "$") {
			t.Errorf("%s: unknown Grafana variable left in %q", r.Record, r.Expr)
		}
	}
	// YAML is a superset of JSON: promtool reads this as a rule file.
	file := map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}}
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, "check", "rules", path)
	if want := fmt.Sprintf("%d rules found", len(rules)); !strings.Contains(out, want) {
		t.Errorf("promtool on the dashboard's %d queries: %s", len(rules), out)
	}
}

// exported returns the metric families a Collector exposes after a real
// (in-memory) run, by name, with their types; it checks that this is every
// family the Collector describes.
func exported(t *testing.T) map[string]string {
	t.Helper()
	m, err := metrics.New(metrics.WithNodes("n1"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	s, err := scheduler.New(schedulertest.NewLocker(), scheduler.WithObserver(m.SchedulerObserver()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add("job", "@hourly", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context()) }()
	if _, err := s.Trigger(t.Context(), "job"); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, scheduler.ErrClosed) {
		t.Fatal(err)
	}
	m.LeakObserver()(leakscan.Event{Missed: map[string]map[string]int{"job": {"no_quorum": 1}}}) // made when found
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, mf := range mfs {
		names[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	descs := make(chan *prometheus.Desc, 100)
	m.Describe(descs)
	close(descs)
	if len(descs) != len(names) {
		t.Fatalf("the Collector describes %d metrics but exposes %d families", len(descs), len(names))
	}
	return names
}

// token matches PromQL metric names, recording rule names included.
var token = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)

// TestMetricNames checks that every metric named by the rules, their unit
// tests and the dashboard is one the Collector exports (or a recording rule
// of alerts.yml built on one), and that the dashboard shows every metric.
func TestMetricNames(t *testing.T) {
	families := exported(t)
	// known reports whether name is an exported series name: a family, or
	// a histogram's _bucket, _sum or _count.
	known := func(name string) bool {
		if families[name] != "" {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && families[base] == "histogram" {
				return true
			}
		}
		return false
	}
	rules, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*-?\s*record:\s*(\S+)`).FindAllStringSubmatch(string(rules), -1) {
		recorded[m[1]] = true
	}
	if len(recorded) == 0 {
		t.Fatal("no recording rule found in alerts.yml")
	}

	used := map[string]bool{}
	for _, file := range []string{"alerts.yml", "alerts_test.yml", "dashboard.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tok := range token.FindAllString(string(data), -1) {
			tok = strings.TrimRight(tok, ":") // a YAML key or prose ("redcron: only ...")
			var parts []string
			switch {
			case strings.HasPrefix(tok, "redcron_") && !strings.Contains(tok, ":"):
				parts = []string{tok}
			case strings.Contains(tok, ":") && strings.Contains(tok, "redcron"):
				// A recording rule, level:metric:operations: it must be
				// defined, and the metric in it exported.
				if !recorded[tok] {
					t.Errorf("%s: %s is not a recording rule of alerts.yml", file, tok)
				}
				for _, p := range strings.Split(tok, ":") {
					if strings.HasPrefix(p, "redcron_") {
						parts = append(parts, p)
					}
				}
			}
			for _, name := range parts {
				n++
				if !known(name) {
					t.Errorf("%s: metric %s is not exported by the metrics package", file, name)
				}
				if file == "dashboard.json" {
					used[strings.TrimSuffix(name, "_bucket")] = true
				}
			}
		}
		if n == 0 {
			t.Errorf("%s names no metric", file)
		}
	}
	var missing []string
	for name := range families {
		if !used[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("the dashboard does not show %v", missing)
	}
}
