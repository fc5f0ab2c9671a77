package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/scheduler/schedulertest"
)

// TestJobTableDigest: two replicas with the same jobs, added in another
// order and with their specs spaced differently, publish the same digest;
// an Add changes it once it is recorded (changed), and a job changed back
// brings the first digest back.
func TestJobTableDigest(t *testing.T) {
	nop := scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })
	table := func(jobs ...[2]string) (*jobTable, *scheduler.Scheduler) {
		t.Helper()
		s, err := scheduler.New(schedulertest.NewLocker())
		if err != nil {
			t.Fatal(err)
		}
		tb := &jobTable{s: s}
		for _, j := range jobs {
			if err := s.Add(j[0], j[1], nop, scheduler.WithRetry(2, time.Second)); err != nil {
				t.Fatal(err)
			}
			tb.changed()
		}
		return tb, s
	}
	a, _ := table([2]string{"report", "0 3 * * *"}, [2]string{"cleanup", "@hourly"})
	b, s := table([2]string{"cleanup", "@hourly"}, [2]string{"report", " 0  3 * * * "})
	same := a.get()
	if same == "" || b.get() != same {
		t.Fatalf("digests %q and %q for the same jobs", same, b.get())
	}
	fields, _ := b.table()
	if len(fields) != 2 {
		t.Errorf("the table %v, want two jobs", fields)
	}

	if err := s.Add("forgotten", "@daily", nop); err != nil {
		t.Fatal(err)
	}
	if got := b.get(); got != same {
		t.Errorf("the digest changed to %q before the Add was recorded", got)
	}
	b.changed()
	if got := b.get(); got == same {
		t.Error("a job added: the digest did not change")
	}
	if _, specs := b.jobs(); len(specs) != 3 || specs["forgotten"].Spec != "@daily" {
		t.Errorf("the table's specs %v, want three jobs with forgotten's @daily", specs)
	}
	if err := s.Remove("forgotten"); err != nil {
		t.Fatal(err)
	}
	b.changed()
	if got := b.get(); got != same {
		t.Errorf("the job removed: digest %q, want %q", got, same)
	}
}
