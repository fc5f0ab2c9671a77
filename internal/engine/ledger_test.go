package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// TestLedgerCommitAndRelease: a commit adds the acquisition's started
// record; its release replaces it with the final record, marked released
// where the lock held and lost where it did not; the ledger keeps the
// newest records only, expires by itself, and a ledger key of another type
// fails neither the commit nor the release.
func TestLedgerCommitAndRelease(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	c := s.Client(t)
	const window = time.Hour
	acquire := func(tick int64) (string, engine.Record) {
		t.Helper()
		v := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Occurrence: tick, Owner: "r1"}.String()
		if rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: v, TTL: time.Minute, Occurrence: tick}); err != nil || rep.Status != engine.Acquired {
			t.Fatalf("acquire %d: %+v, %v", tick, rep, err)
		}
		rec := engine.Record{Job: k.Name, Owner: "r1", Tick: tick, Fence: uint64(tick), Start: tick}
		w := engine.LedgerWrite{New: rec.Text(), Score: tick, Cap: 3, Window: window}
		if ok, err := n.Commit(ctx, engine.CommitRequest{Keys: k, Value: v, Fence: uint64(tick), Occurrence: tick, Ledger: w}, time.Hour); !ok || err != nil {
			t.Fatalf("commit %d: %v, %v", tick, ok, err)
		}
		return v, rec
	}
	release := func(v string, rec engine.Record, result string) bool {
		t.Helper()
		end := rec
		end.Result, end.End, end.Error = result, rec.Tick+5, strings.Repeat("é", 150)
		w := engine.LedgerWrite{Old: rec.Text(), New: end.Text(), Score: rec.Tick, Cap: 3, Window: window}
		ok, err := n.Release(ctx, k, v, rec.Tick, time.Hour, w)
		if err != nil {
			t.Fatalf("release %d: %v", rec.Tick, err)
		}
		return ok
	}
	ledger := func() []engine.Entry {
		t.Helper()
		es, err := n.Ledger(ctx, k, 10)
		if err != nil {
			t.Fatal(err)
		}
		return es
	}

	v1, r1 := acquire(1000)
	if es := ledger(); len(es) != 1 || es[0].State != engine.RecordStarted || es[0].Record != r1 || es[0].Score != 1000 {
		t.Fatalf("after the commit: %+v; want the started record of tick 1000", es)
	}
	if !release(v1, r1, "success") {
		t.Fatal("release of a held lock: not held")
	}
	es := ledger()
	if len(es) != 1 || es[0].State != engine.RecordReleased || es[0].Record.Result != "success" || es[0].Record.End != 1005 {
		t.Fatalf("after the release: %+v; want one released record with its result", es)
	}
	// The release replaced the only record, which made the key anew.
	if ttl := c.PTTL(ctx, k.Ledger).Val(); ttl <= 0 || ttl > window {
		t.Errorf("ledger TTL after the first release %v; want at most the window %v", ttl, window)
	}
	if e := es[0].Record.Error; len(e) > engine.MaxRecordError || !strings.HasPrefix(e, "éé") || !strings.HasSuffix(e, "é") {
		t.Errorf("error kept as %d bytes %q; want at most %d, cut between characters", len(e), e, engine.MaxRecordError)
	}

	v2, r2 := acquire(2000)
	if err := c.Del(ctx, k.Lock).Err(); err != nil { // the lease expired
		t.Fatal(err)
	}
	if release(v2, r2, "success") {
		t.Fatal("release of a lost lock: held")
	}
	if es := ledger(); len(es) != 2 || es[0].State != engine.RecordLost || es[0].Record.Tick != 2000 {
		t.Fatalf("after a lost lease's release: %+v; want its record marked lost, newest first", es)
	}

	for tick := int64(3000); tick <= 5000; tick += 1000 {
		v, r := acquire(tick)
		release(v, r, "failed")
	}
	es = ledger()
	if len(es) != 3 || es[0].Record.Tick != 5000 || es[2].Record.Tick != 3000 {
		t.Fatalf("after 5 runs with a cap of 3: %+v; want ticks 5000, 4000, 3000", es)
	}
	if ttl := c.PTTL(ctx, k.Ledger).Val(); ttl <= 0 || ttl > window {
		t.Errorf("ledger TTL %v; want at most the window %v", ttl, window)
	}

	if err := c.Del(ctx, k.Ledger).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, k.Ledger, "not a ledger", 0).Err(); err != nil {
		t.Fatal(err)
	}
	v6, r6 := acquire(6000) // fatal if the commit failed
	if !release(v6, r6, "success") {
		t.Error("a ledger of another type failed the release")
	}
	if _, err := n.Ledger(ctx, k, 10); !engine.ServerError(err) {
		t.Errorf("reading a ledger of another type: %v; want the server's error", err)
	}
}

// TestLedgerOperatorAndMissed: an operator's action and a missed tick are
// added to a ledger that did not exist, which then gets a TTL; each reads
// back in its state, at its score (the action's time, the tick).
func TestLedgerOperatorAndMissed(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	op := engine.Record{Job: k.Name, Owner: "ann@host", Start: 2000, Result: "paused"}
	if err := n.AddOperator(ctx, k, op, 20, time.Hour); err != nil {
		t.Fatal(err)
	}
	missed := engine.Record{Job: k.Name, Tick: 1000, Result: "no_report"}
	if err := n.AddMissed(ctx, k, missed, 20, time.Hour); err != nil {
		t.Fatal(err)
	}
	es, err := n.Ledger(ctx, k, 10)
	if err != nil || len(es) != 2 {
		t.Fatalf("ledger: %+v, %v", es, err)
	}
	if es[0].State != engine.RecordOperator || es[0].Record != op || es[0].Score != 2000 {
		t.Errorf("newest entry %+v; want the operator's action at 2000", es[0])
	}
	if es[1].State != engine.RecordMissed || es[1].Record != missed || es[1].Score != 1000 {
		t.Errorf("oldest entry %+v; want the missed tick at 1000", es[1])
	}
	if ttl := s.Client(t).PTTL(ctx, k.Ledger).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("ledger TTL %v; want up to an hour", ttl)
	}
}
