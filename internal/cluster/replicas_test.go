package cluster_test

import (
	"testing"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
)

// TestReplicas: a replica's send and start times are taken back to the
// nodes' clock by its offset; with two tables tied for the most common,
// every replica with a table is marked.
func TestReplicas(t *testing.T) {
	now := time.Now()
	ahead := int64(1500)
	rep := &leaks.Report{Live: []string{"a", "b", "c"}, Beats: map[string]engine.Beat{
		"a": {Format: engine.BeatFormat, JobTable: "x", OffsetMS: &ahead, SentMS: now.Add(500 * time.Millisecond).UnixMilli(),
			StartMS: now.Add(-time.Hour).UnixMilli()},
		"b": {Format: engine.BeatFormat, JobTable: "y", SentMS: now.Add(-2 * time.Second).UnixMilli()},
		"c": {SentMS: now.Add(-3 * time.Second).UnixMilli()},
	}}
	got, common, tables := cluster.Replicas(rep)
	if common != "" || tables != 2 || len(got) != 3 || !got[0].TableDiffers || !got[1].TableDiffers || got[2].TableDiffers {
		t.Fatalf("Replicas = %+v, %q, %d: want two tables, none the most common, a and b marked", got, common, tables)
	}
	ms := func(t time.Time) int64 { return t.UnixMilli() }
	if sent := ms(got[0].Sent); sent != ms(now.Add(-time.Second)) {
		t.Errorf("a heartbeat sent 0.5 s ahead by a clock 1.5 s ahead: sent %d ms before now, want 1000", ms(now)-sent)
	}
	if got[0].Offset != 1500*time.Millisecond || !got[0].OffsetKnown || ms(got[0].Started) != ms(now.Add(-time.Hour-1500*time.Millisecond)) {
		t.Errorf("a: offset %v (known %v), start %v", got[0].Offset, got[0].OffsetKnown, got[0].Started)
	}
	if ms(got[1].Sent) != ms(now.Add(-2*time.Second)) || ms(got[2].Sent) != ms(now.Add(-3*time.Second)) || got[1].OffsetKnown {
		t.Errorf("b %+v, c %+v", got[1], got[2])
	}
	rep.Live = append(rep.Live, "d")
	rep.Beats["d"] = engine.Beat{Format: engine.BeatFormat, JobTable: "x"}
	if got, common, _ := cluster.Replicas(rep); common != "x" || got[0].TableDiffers || !got[1].TableDiffers || got[3].TableDiffers {
		t.Errorf("Replicas with x the most common: %+v, %q", got, common)
	}
}
