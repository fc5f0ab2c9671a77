package scheduler_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/scheduler/schedulertest"
)

// scanningLocker adds a LeakScanner to a schedulertest.Locker; the scan
// lock is shared by the replicas through busy.
type scanningLocker struct {
	*schedulertest.Locker
	busy  *atomic.Bool
	scans *atomic.Int32
	fail  bool
}

func (l scanningLocker) ScanLeaks(ctx context.Context) (map[string]int, error) {
	if !l.busy.CompareAndSwap(false, true) {
		return nil, scheduler.ErrHeld
	}
	defer l.busy.Store(false)
	l.scans.Add(1)
	time.Sleep(time.Second) // a scan takes a while
	if l.fail {
		return nil, errors.New("node down")
	}
	return map[string]int{"orphaned": 2, "no_expiry": 0}, nil
}

func TestLeakScan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var busy atomic.Bool
		var scans atomic.Int32
		l := locker()
		var recs []*recorder
		var stops []func()
		for range 3 { // replicas started together scan one at a time
			rec := &recorder{}
			recs = append(recs, rec)
			s := newScheduler(t, scanningLocker{Locker: l, busy: &busy, scans: &scans},
				scheduler.WithObserver(rec), scheduler.WithLeakScan(time.Minute))
			stops = append(stops, start(t, s))
		}
		time.Sleep(10*time.Minute + 30*time.Second)
		for _, stop := range stops {
			stop()
		}
		events := 0
		for _, rec := range recs {
			for _, ev := range rec.of(scheduler.EventLeakScan) {
				events++
				if ev.Err != nil || ev.Leaks["orphaned"] != 2 || ev.Duration != time.Second {
					t.Errorf("leak scan event %+v", ev)
				}
			}
		}
		// Each replica tries every minute; overlapping attempts are refused.
		if n := int(scans.Load()); n != events || n < 10 || n > 30 {
			t.Errorf("%d scans, %d events over 10 minutes with 3 replicas scanning every minute", n, events)
		}
	})
}

func TestLeakScanErrorsAndOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var busy atomic.Bool
		var scans atomic.Int32
		rec := &recorder{}
		s := newScheduler(t, scanningLocker{Locker: locker(), busy: &busy, scans: &scans, fail: true},
			scheduler.WithObserver(rec), scheduler.WithLeakScan(time.Minute))
		stop := start(t, s)
		time.Sleep(3 * time.Minute)
		stop()
		evs := rec.of(scheduler.EventLeakScan)
		if len(evs) < 2 || evs[0].Err == nil {
			t.Errorf("failed scans not reported: %+v", evs)
		}

		off := newScheduler(t, scanningLocker{Locker: locker(), busy: &busy, scans: &scans},
			scheduler.WithLeakScan(0))
		before := scans.Load()
		stop = start(t, off)
		time.Sleep(time.Hour)
		stop()
		if scans.Load() != before {
			t.Error("the scan ran with WithLeakScan(0)")
		}
	})
	if _, err := scheduler.New(locker(), scheduler.WithLeakScan(time.Millisecond)); !errors.Is(err, scheduler.ErrInvalidOption) {
		t.Errorf("WithLeakScan(1ms): %v", err)
	}
}
