package systemtest_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
)

// TestOnceJobReplicaKilled: three replica processes over real Redis masters
// run a one-time job (about 3 s long). The one running it is SIGKILLed in
// the middle of its run, then the others are restarted one by one (with a
// catch-up window, so that each new process tries the tick again): the job
// is not run a second time anywhere. (The killed run is not handed on: its
// tick was claimed when its lease was won.)
func TestOnceJobReplicaKilled(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n := &nemesis{t: t, dir: t.TempDir(), exe: exe, world: world{procs: map[string]proc{}}}
	n.cluster = redistest.Start(t, 3)
	n.storeSrv = redistest.Start(t, 1).Node(0)
	// Brand-new servers vote after a max TTL.
	n.once = time.Now().Add(nemesisMaxTTL + 5*time.Second).Truncate(time.Second)
	n.startReplicas()
	onceRecords := func(ev string) []record {
		var out []record
		for _, rs := range n.histories() {
			for _, r := range rs {
				if r.Job == "once" && r.Ev == ev {
					out = append(out, r)
				}
			}
		}
		return out
	}
	// waitFor polls the histories, files written by other processes, until
	// there are k records ev of the job.
	waitFor := func(ev string, k int, within time.Duration) []record {
		t.Helper()
		for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
			if rs := onceRecords(ev); len(rs) >= k {
				return rs
			} else if time.Now().After(deadline) {
				t.Fatalf("%d %q records of the one-time job after %v, want %d", len(rs), ev, within, k)
			}
		}
	}
	start := waitFor("start", 1, time.Until(n.once)+30*time.Second)[0]
	if start.Tick != n.once.UnixMilli() {
		t.Errorf("the run's tick is %v, want %v", time.UnixMilli(start.Tick), n.once)
	}
	for _, p := range n.replicas {
		if fmt.Sprint("replica-", p.idx) == start.Replica {
			n.stopReplica(p, syscall.SIGKILL)
			n.startReplica(p, true)
		}
	}
	waitFor("skip", 3, 30*time.Second) // the two others at the tick, the holder's new process
	for _, p := range n.replicas {
		if fmt.Sprint("replica-", p.idx) != start.Replica {
			n.stopReplica(p, syscall.SIGTERM)
			n.startReplica(p, true)
		}
	}
	for _, r := range waitFor("skip", 5, 30*time.Second) {
		if r.Reason != "held" && r.Reason != "already_run" {
			t.Errorf("%s: the one-time job's tick skipped: %s (%s)", r.Replica, r.Reason, r.Err)
		}
	}
	if starts := onceRecords("start"); len(starts) != 1 {
		t.Errorf("the one-time job started %d times, want once: %+v", len(starts), starts)
	}
	if ends := onceRecords("end"); len(ends) != 0 {
		t.Errorf("the killed run, or another, ended: %+v", ends)
	}
}
