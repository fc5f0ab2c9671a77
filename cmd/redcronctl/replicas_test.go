package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/scheduler"
)

// statusDoc is the part of status -json about the replicas, decoded into
// the test's own types.
type statusDoc struct {
	Replicas   []string `json:"replicas"`
	JobTables  int      `json:"job_tables"`
	Heartbeats []struct {
		Instance      string  `json:"instance"`
		Version       string  `json:"version"`
		JobTable      string  `json:"job_table"`
		TableDiffers  bool    `json:"job_table_differs"`
		OffsetMS      *int64  `json:"clock_offset_ms"`
		Started       *string `json:"started"`
		LastBeatAgeMS *int64  `json:"last_beat_age_ms"`
	} `json:"heartbeats"`
}

// heartbeatReplica runs a front door over c as replica id, heartbeating
// every second, with the jobs given (name, spec), added in their order;
// each heartbeat sends id on beats. It runs until the test ends.
func heartbeatReplica(t *testing.T, c *redistest.Cluster, id string, beats chan<- string, opts []leakscan.Option, jobs ...[2]string) {
	t.Helper()
	opts = append(opts, leakscan.WithHeartbeat(time.Second, 2*time.Second), leakscan.WithInterval(0),
		leakscan.WithObserver(func(e leakscan.Event) {
			if !e.Scan && e.Err == nil {
				select {
				case beats <- id:
				default:
				}
			}
		}))
	s, err := redcron.New(c.Addrs(), redcron.WithSchedulerOptions(scheduler.WithInstanceID(id)), redcron.WithLeakScanOptions(opts...))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := s.Add(j[0], j[1], func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
}

// awaitBeats waits for n heartbeats of each of ids, the first of which
// may have been sent before the call.
func awaitBeats(t *testing.T, beats <-chan string, n int, ids ...string) {
	t.Helper()
	seen := map[string]int{}
	deadline := time.After(30 * time.Second)
	for _, id := range ids {
		for seen[id] < n {
			select {
			case got := <-beats:
				seen[got]++
			case <-deadline:
				t.Fatalf("heartbeats in 30 s: %v, want %d of each of %v", seen, n, ids)
			}
		}
	}
}

// TestStatusReplicas: status lists the live replicas with their version,
// job table, clock offset and last heartbeat. Two replicas with the same
// jobs, added in another order, agree; a third with one more job is marked
// as differing from the most common table; a replica of the previous
// release, whose heartbeat is a plain number, is listed without details.
func TestStatusReplicas(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	beats := make(chan string, 100)
	heartbeatReplica(t, c, "replica-a", beats, []leakscan.Option{leakscan.WithReplicaInfo("v1.4.2", nil)},
		[2]string{"report", "0 3 * * *"}, [2]string{"cleanup", "@hourly"})
	heartbeatReplica(t, c, "replica-b", beats, nil, [2]string{"cleanup", "@hourly"}, [2]string{"report", "0 3 * * *"})
	awaitBeats(t, beats, 2, "replica-a", "replica-b") // the second carries the offset the first measured
	for _, s := range c.Nodes() {
		if err := s.Client(t).Set(context.Background(), "redcron:hb:old-replica", time.Now().UnixMilli(), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	status := func() (outcome, statusDoc) {
		t.Helper()
		o := exe(t, bin, nil, "-addrs", addrs, "-json", "status")
		var doc statusDoc
		if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 {
			t.Fatalf("status -json: %v\n%s", err, o)
		}
		return o, doc
	}
	_, doc := status()
	if len(doc.Heartbeats) != 3 || doc.JobTables != 1 || len(doc.Replicas) != 3 {
		t.Fatalf("status of two agreeing replicas and an old one: %+v", doc)
	}
	old, a, b := doc.Heartbeats[0], doc.Heartbeats[1], doc.Heartbeats[2] // by instance id
	if a.Instance != "replica-a" || a.Version != "v1.4.2" || a.JobTable == "" || a.JobTable != b.JobTable ||
		a.TableDiffers || b.TableDiffers || a.OffsetMS == nil || *a.OffsetMS < -1000 || *a.OffsetMS > 1000 ||
		a.Started == nil || a.LastBeatAgeMS == nil || *a.LastBeatAgeMS < -1000 || *a.LastBeatAgeMS > 10000 {
		t.Errorf("replica-a %+v, replica-b %+v: want the version set, the same table, an offset and a recent heartbeat", a, b)
	}
	if b.Version != engine.MainVersion() {
		t.Errorf("replica-b's version %q, want the build's, %q", b.Version, engine.MainVersion())
	}
	if old.Instance != "old-replica" || old.Version != "" || old.JobTable != "" || old.TableDiffers || old.OffsetMS != nil ||
		old.Started != nil || old.LastBeatAgeMS == nil || *old.LastBeatAgeMS > 10000 {
		t.Errorf("old replica %+v: want live, its heartbeat's age and nothing else", old)
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "status"); o.code != 0 || strings.Contains(o.stdout, "\n* ") ||
		!strings.Contains(o.stdout, "live replicas: [old-replica replica-a replica-b]") {
		t.Errorf("status of agreeing replicas: %s", o)
	}

	heartbeatReplica(t, c, "replica-c", beats, nil, [2]string{"cleanup", "@hourly"}, [2]string{"report", "0 3 * * *"},
		[2]string{"forgotten", "@daily"})
	awaitBeats(t, beats, 1, "replica-c")
	_, doc = status()
	if len(doc.Heartbeats) != 4 || doc.JobTables != 2 {
		t.Fatalf("status with a replica running one more job: %+v", doc)
	}
	for _, r := range doc.Heartbeats {
		if r.TableDiffers != (r.Instance == "replica-c") {
			t.Errorf("%s: job table %q marked as differing: %v; want only replica-c's", r.Instance, r.JobTable, r.TableDiffers)
		}
	}
	o := exe(t, bin, nil, "-addrs", addrs, "status")
	rows := map[string][]string{}
	for line := range strings.Lines(o.stdout) {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	if r := rows["replica-a"]; len(r) < 6 || r[1] != "v1.4.2" || r[2] != a.JobTable || r[3] == "*" || !strings.HasSuffix(r[3], "ms") {
		t.Errorf("replica-a's row %q, want its version, table unmarked and offset:\n%s", r, o)
	}
	if r := rows["replica-c"]; len(r) < 4 || r[3] != "*" {
		t.Errorf("replica-c's row %q, want its table marked:\n%s", r, o)
	}
	if r := rows["old-replica"]; len(r) < 5 || r[1] != "-" || r[2] != "-" || r[3] != "-" {
		t.Errorf("old-replica's row %q, want no version, table or offset:\n%s", r, o)
	}
	if !strings.Contains(o.stdout, "* job table differs from the most common, "+a.JobTable+" (2 job tables among the replicas)") {
		t.Errorf("no note naming the most common table:\n%s", o)
	}
}

// TestReplicasOf: a replica's age is measured from its heartbeat's send
// time (by the nodes' clock) to now; what is unknown is null.
func TestReplicasOf(t *testing.T) {
	now := time.Now()
	got := replicasOf([]admin.Replica{
		{Instance: "a", JobTable: "x", TableDiffers: true, Offset: 1500 * time.Millisecond, OffsetKnown: true,
			Sent: now.Add(-time.Second), Started: now.Add(-time.Hour)},
		{Instance: "c"},
	}, now)
	if len(got) != 2 || *got[0].LastBeatAgeMS != 1000 || *got[0].OffsetMS != 1500 || !got[0].TableDiffers ||
		*got[0].Started != now.Add(-time.Hour).UTC().Format(acquiredLayout) {
		t.Errorf("replicasOf(a) = %+v", got[0])
	}
	if c := got[1]; c.LastBeatAgeMS != nil || c.OffsetMS != nil || c.Started != nil {
		t.Errorf("replicasOf(c), an older release's = %+v, want its unknowns null", c)
	}
}

// TestStatusFlagsAnotherService: a replica whose job table shares no job
// with the others' (another service under the same prefix) is flagged,
// in -json and in the table with a note saying what to do; a replica in
// the middle of a deploy (one more job) is not.
func TestStatusFlagsAnotherService(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	beats := make(chan string, 100)
	report, cleanup := [2]string{"report", "0 3 * * *"}, [2]string{"cleanup", "@hourly"}
	heartbeatReplica(t, c, "a1", beats, nil, report, cleanup)
	heartbeatReplica(t, c, "a2", beats, nil, report, cleanup)
	heartbeatReplica(t, c, "a3", beats, nil, report, cleanup, [2]string{"forgotten", "@daily"})
	heartbeatReplica(t, c, "b1", beats, nil, [2]string{"invoice", "@daily"})
	awaitBeats(t, beats, 1, "a1", "a2", "a3", "b1")
	var doc struct {
		Heartbeats []struct {
			Instance    string `json:"instance"`
			SharesNoJob bool   `json:"shares_no_job"`
		} `json:"heartbeats"`
	}
	awaitStatusJSON(t, bin, addrs, "every replica's table", func(jobs map[string]jobStatus) bool {
		return jobs["report"].PublishedBy == 3 && jobs["forgotten"].PublishedBy == 1 && jobs["invoice"].PublishedBy == 1
	})
	o := exe(t, bin, nil, "-addrs", addrs, "status", "-json")
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || len(doc.Heartbeats) != 4 {
		t.Fatalf("status -json: %v\n%s", err, o)
	}
	for _, r := range doc.Heartbeats {
		if r.SharesNoJob != (r.Instance == "b1") {
			t.Errorf("%s: shares_no_job %v; want only b1's flagged", r.Instance, r.SharesNoJob)
		}
	}
	o = exe(t, bin, nil, "-addrs", addrs, "status")
	rows := map[string][]string{}
	for line := range strings.Lines(o.stdout) {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	if r := rows["b1"]; len(r) < 5 || r[3] != "*" || r[4] != "!" || rows["a3"][3] != "*" || rows["a3"][4] == "!" ||
		!strings.Contains(o.stdout, "! job table shares no job with the other replicas': another service under the same key prefix?") {
		t.Errorf("status: want b1's table marked ! with the note, a3's only *:\n%s", o)
	}
}
