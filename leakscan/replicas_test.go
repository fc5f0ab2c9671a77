package leakscan

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/redistest"
)

// TestJobTablesDiffer: a scan counts the distinct job tables of the live
// replicas and, when there are more than one, logs them by replica; a
// replica whose heartbeat is in the old format counts as live, without a
// job table.
func TestJobTablesDiffer(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxTimeout(t, time.Minute)
	for _, owner := range []string{"a", "b"} {
		_, r := pair(t, c, owner, WithReplicaInfo("", func() string { return "d-one" }))
		if err := r.heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, cl := range c.Nodes() { // a replica of the previous release
		if err := cl.Client(t).Set(ctx, "redcron:hb:old", time.Now().UnixMilli(), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	var events []Event
	_, s := pair(t, c, "", WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithObserver(func(e Event) { events = append(events, e) }))
	s.scanOnce(ctx)
	if len(events) != 1 || events[0].Err != nil || events[0].JobTables != 1 {
		t.Fatalf("scan of two replicas with one job table: %+v", events)
	}
	if strings.Contains(logs.String(), "job tables differ") {
		t.Errorf("agreeing replicas logged as differing:\n%s", logs.String())
	}

	_, b := pair(t, c, "b", WithReplicaInfo("", func() string { return "d-two" }))
	if err := b.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := s.leaks.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Live, []string{"a", "b", "old"}) || rep.Beats["old"].Details() || rep.Beats["old"].Sent().IsZero() {
		t.Errorf("live %v, old replica's heartbeat %+v: want it live, without details", rep.Live, rep.Beats["old"])
	}
	s.scanOnce(ctx)
	if len(events) != 2 || events[1].JobTables != 2 {
		t.Fatalf("scan of two replicas with different job tables: %+v", events)
	}
	if log := logs.String(); !strings.Contains(log, "job tables differ") || !strings.Contains(log, "job_tables=2") ||
		!strings.Contains(log, "replicas.a=d-one") || !strings.Contains(log, "replicas.b=d-two") || strings.Contains(log, "replicas.old") {
		t.Errorf("log does not name the replicas and their tables:\n%s", log)
	}
}

// TestJobTablesOfReport: replicas are grouped by digest; those without one
// are left out.
func TestJobTablesOfReport(t *testing.T) {
	rep := &leaks.Report{Live: []string{"a", "b", "c", "d"}, Beats: map[string]engine.Beat{
		"a": {Format: engine.BeatFormat, JobTable: "x"}, "b": {Format: engine.BeatFormat, JobTable: "y"},
		"c": {Format: engine.BeatFormat, JobTable: "x"}, "d": {SentMS: 1},
	}}
	got := rep.JobTables()
	if len(got) != 2 || !slices.Equal(got["x"], []string{"a", "c"}) || !slices.Equal(got["y"], []string{"b"}) {
		t.Errorf("JobTables = %v", got)
	}
}
