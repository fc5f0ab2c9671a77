package engine_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

func claimOne(t *testing.T, n *engine.Node, p engine.Parent, k engine.LockKeys, value string, occ int64, fence uint64) engine.AcquireReply {
	t.Helper()
	rec := engine.Record{Job: k.Name, Owner: "r1", Tick: occ, Fence: fence}.Text()
	ch := make(chan []engine.AcquireResult, 1)
	n.ClaimAllAsync(context.Background(), []engine.ClaimRequest{{Right: p, Keys: k, Running: engine.RunningValue(p, value), Occurrence: occ, Fence: fence,
		Ledger: engine.LedgerWrite{New: rec, Score: occ, Cap: 10, Window: time.Hour}}}, nil, time.Hour, func(rs []engine.AcquireResult, _ []bool) { ch <- rs })
	rs := <-ch
	if rs[0].Err != nil {
		t.Fatalf("claim %s at %d: %v", k.Name, occ, rs[0].Err)
	}
	if rs[0].Reply.Info == nil {
		t.Errorf("claim %s at %d: no server info", k.Name, occ)
	}
	return rs[0].Reply
}

func free(t *testing.T, n *engine.Node, k engine.LockKeys, running string) bool {
	t.Helper()
	ch := make(chan []engine.CommitResult, 1)
	n.FreeAllAsync(context.Background(), []engine.FreeRequest{{Keys: k, Running: running}}, func(rs []engine.CommitResult) { ch <- rs })
	rs := <-ch
	if rs[0].Err != nil {
		t.Fatalf("free %s: %v", k.Name, rs[0].Err)
	}
	return rs[0].Held
}

// TestClaimParts: a part is claimed while its parent holds, once per
// occurrence, with a fence above the counter; while it runs, neither a
// second part nor the lock itself is had, and once freed (or once its
// parent is gone) both are.
func TestClaimParts(t *testing.T) {
	n, s, k := setup(t)
	rc := s.Client(t)
	ctx := context.Background()
	p := engine.Parent{Key: "t~shards:shard-1", Value: "parent-1"}
	rc.Set(ctx, p.Key, p.Value, time.Minute)

	if rep := claimOne(t, n, p, k, "part-a", 1000, 5); rep.Status != engine.Acquired {
		t.Fatalf("first claim: %v", rep.Status)
	}
	if rep := claimOne(t, n, p, k, "part-b", 2000, 6); rep.Status != engine.Held || rep.Holder != "part-a" {
		t.Errorf("claim while part-a runs: %v %q, want held by part-a", rep.Status, rep.Holder)
	}
	rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "lock-v", TTL: time.Minute})
	if err != nil || rep.Status != engine.Held || rep.Holder != "part-a" {
		t.Errorf("the lock while part-a runs: %+v, %v; want held by part-a", rep, err)
	}
	if !free(t, n, k, engine.RunningValue(p, "part-a")) {
		t.Error("free of a running part: not running")
	}
	if free(t, n, k, engine.RunningValue(p, "part-a")) {
		t.Error("second free: still running")
	}
	if rep := claimOne(t, n, p, k, "part-c", 1000, 7); rep.Status != engine.AlreadyRun {
		t.Errorf("claim of a claimed occurrence: %v, want already run", rep.Status)
	}
	if rep := claimOne(t, n, p, k, "part-d", 2000, 5); rep.Status != engine.FenceAhead || rep.Fence != 5 {
		t.Errorf("claim with a fence at the counter: %v (counter %d), want fence ahead at 5", rep.Status, rep.Fence)
	}
	if rep := claimOne(t, n, p, k, "part-e", 2000, 8); rep.Status != engine.Acquired {
		t.Fatalf("claim after the free: %v", rep.Status)
	}
	// The parent goes: the part ends with it, for the lock and for claims.
	rc.Set(ctx, p.Key, "parent-2", time.Minute)
	if rep := claimOne(t, n, p, k, "part-f", 3000, 9); rep.Status != engine.ParentLost || rep.Holder != "parent-2" {
		t.Errorf("claim under a lost parent: %v %q, want parent lost to parent-2", rep.Status, rep.Holder)
	}
	p2 := engine.Parent{Key: p.Key, Value: "parent-2"}
	if rep := claimOne(t, n, p2, k, "part-g", 3000, 9); rep.Status != engine.Acquired {
		t.Errorf("claim under the new parent while the old one's part is left: %v", rep.Status)
	}
	rc.Del(ctx, p.Key)
	rep, err = n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "lock-v", TTL: time.Minute})
	if err != nil || rep.Status != engine.Acquired {
		t.Errorf("the lock once the parent is gone: %+v, %v", rep, err)
	}
	if rep := claimOne(t, n, p2, k, "part-h", 4000, 10); rep.Status != engine.ParentLost {
		t.Errorf("claim without its parent: %v", rep.Status)
	}
	// Pause.
	rc.Set(ctx, p.Key, p2.Value, time.Minute)
	rc.Del(ctx, k.Lock)
	free(t, n, k, engine.RunningValue(p2, "part-g"))
	rc.Set(ctx, k.Pause, "op", 0)
	if rep := claimOne(t, n, p2, k, "part-i", 5000, 11); rep.Status != engine.Paused {
		t.Errorf("claim of a paused lock: %v", rep.Status)
	}
}

// TestClaimNeedsItsParent: the holder of the right claims no part on a
// node where the part's parent (its replica's anchor) does not hold: the
// part would not run there (its running value counts only while its parent
// holds), so a claim won with that node's vote would leave the job free
// for another holder there.
func TestClaimNeedsItsParent(t *testing.T) {
	n, s, k := setup(t)
	rc := s.Client(t)
	ctx := context.Background()
	right := engine.Parent{Key: "t~shards:shard-1", Value: "right-1"}
	anchor := engine.Parent{Key: "t~shards:replica-1", Value: "anchor-1"}
	rc.Set(ctx, right.Key, right.Value, time.Minute)
	ch := make(chan []engine.AcquireResult, 1)
	n.ClaimAllAsync(ctx, []engine.ClaimRequest{{Right: right, Keys: k, Running: engine.RunningValue(anchor, "part-a"), Occurrence: 1000, Fence: 5}},
		nil, time.Hour, func(rs []engine.AcquireResult, _ []bool) { ch <- rs })
	rs := <-ch
	if rs[0].Err != nil || rs[0].Reply.Status != engine.ParentLost {
		t.Fatalf("claim under a parent that does not hold: %+v, %v; want parent lost", rs[0].Reply, rs[0].Err)
	}
	if f := rc.HMGet(ctx, k.State, "r|"+k.Name, "m|"+k.Name).Val(); f[0] != nil || f[1] != nil {
		t.Errorf("state after the refused claim: running %v, mark %v; want neither", f[0], f[1])
	}
}

// TestClaimCarriesEnds: a claim call ends the parts it carries, those of
// jobs claimed again in it (their next tick) and the others alike: a part
// whose field still holds its running value ends (recorded "r|" while its
// parent holds), one whose field holds another part's value is left (and
// recorded "l|"); a job's next tick is claimed past its own part's end,
// and a refused claim still deletes the ended field.
func TestClaimCarriesEnds(t *testing.T) {
	c := redistest.Start(t, 1)
	s := c.Node(0)
	rc := s.Client(t)
	n, err := engine.NewNode(s.Addr(), rc)
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := engine.NewKeyspace("t")
	var keys []engine.LockKeys // four jobs of one shard
	for i := 0; len(keys) < 4; i++ {
		if k, _ := ks.Lock(fmt.Sprintf("job-%d", i)); engine.ShardOf(k.Name) == 9 {
			keys = append(keys, k)
		}
	}
	ctx := context.Background()
	right := engine.Parent{Key: "t~shards:shard-9", Value: "right-1"}
	anchor := engine.Parent{Key: "t~shards:replica-1", Value: "anchor-1"}
	rc.Set(ctx, right.Key, right.Value, time.Minute)
	rc.Set(ctx, anchor.Key, anchor.Value, time.Minute)
	lw := func(k engine.LockKeys, occ int64) engine.LedgerWrite {
		return engine.LedgerWrite{New: engine.Record{Job: k.Name, Owner: "r1", Tick: occ}.Text(), Score: occ, Cap: 10, Window: time.Hour}
	}
	req := func(k engine.LockKeys, value string, occ int64) engine.ClaimRequest {
		return engine.ClaimRequest{Right: right, Keys: k, Running: engine.RunningValue(anchor, value), Occurrence: occ, Fence: uint64(occ), Ledger: lw(k, occ)}
	}
	end := func(r engine.ClaimRequest) engine.FreeRequest {
		fin := engine.Record{Job: r.Keys.Name, Owner: "r1", Tick: r.Occurrence, Result: "ok"}.Text()
		return engine.FreeRequest{Keys: r.Keys, Running: r.Running,
			Ledger: engine.LedgerWrite{Old: r.Ledger.New, New: fin, Score: r.Occurrence, Cap: 10, Window: time.Hour}}
	}
	claim := func(reqs []engine.ClaimRequest, ends []engine.FreeRequest) ([]engine.AcquireResult, []bool) {
		t.Helper()
		type res struct {
			rs    []engine.AcquireResult
			ended []bool
		}
		ch := make(chan res, 1)
		n.ClaimAllAsync(ctx, reqs, ends, time.Hour, func(rs []engine.AcquireResult, ended []bool) { ch <- res{rs, ended} })
		r := <-ch
		for i, x := range r.rs {
			if x.Err != nil {
				t.Fatalf("claim %s: %v", reqs[i].Keys.Name, x.Err)
			}
		}
		return r.rs, r.ended
	}
	a, b, c2, d := keys[0], keys[1], keys[2], keys[3]
	first := []engine.ClaimRequest{req(a, "a1", 1000), req(b, "b1", 1000), req(c2, "c1", 1000), req(d, "d1", 1000)}
	for i, r := range must(claim(first, nil)) {
		if r.Reply.Status != engine.Acquired {
			t.Fatalf("first claim of %s: %v", first[i].Keys.Name, r.Reply.Status)
		}
	}
	// c's field is taken over by another part (as a node that missed its
	// end and a later claim would leave it); d is paused for its next tick.
	rc.HSet(ctx, c2.State, "r|"+c2.Name, engine.RunningValue(anchor, "c-other"))
	rc.Set(ctx, d.Pause, "op", 0)
	ends := []engine.FreeRequest{end(first[0]), end(first[1]), end(first[2]), end(first[3])}
	next := []engine.ClaimRequest{req(a, "a2", 2000), req(c2, "c2", 2000), req(d, "d2", 2000)} // b's job is not claimed again
	rs, ended := claim(next, ends)
	for k, e := range ended {
		if !e {
			t.Errorf("end %d (%s) not answered", k, ends[k].Keys.Name)
		}
	}
	want := []engine.AcquireStatus{engine.Acquired, engine.Held, engine.Paused}
	for i, r := range rs {
		if r.Reply.Status != want[i] {
			t.Errorf("next claim of %s: %v, want %v", next[i].Keys.Name, r.Reply.Status, want[i])
		}
	}
	running := func(k engine.LockKeys) any { return rc.HMGet(ctx, k.State, "r|"+k.Name).Val()[0] }
	if got, w := running(a), engine.RunningValue(anchor, "a2"); got != w {
		t.Errorf("a runs %v, want its next part", got)
	}
	if got := running(b); got != nil {
		t.Errorf("b (ended apart) runs %v, want nothing", got)
	}
	if got, w := running(c2), engine.RunningValue(anchor, "c-other"); got != w {
		t.Errorf("c runs %v, want the other part's value left", got)
	}
	if got := running(d); got != nil {
		t.Errorf("d (ended, its next tick paused) runs %v, want nothing", got)
	}
	byJob, _, err := n.ShardLedger(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	finals := map[string]engine.RecordState{}
	for job, es := range byJob {
		for _, e := range es {
			if e.Record.Tick == 1000 && e.Record.Result == "ok" {
				finals[job] = e.State
			}
		}
	}
	for k, w := range map[string]engine.RecordState{a.Name: engine.RecordReleased, b.Name: engine.RecordReleased, c2.Name: engine.RecordLost, d.Name: engine.RecordReleased} {
		if finals[k] != w {
			t.Errorf("final record of %s: %q, want %q (ledger %q)", k, finals[k], w, rc.ZRange(ctx, a.Ledger, 0, -1).Val())
		}
	}
}

func must[T, U any](t T, _ U) T { return t }

// TestClaimSendsShared: the parts of one claim share their value,
// occurrence, fence and the rest of their started records, sent once per
// call: each part still gets its own fields and exactly the started record
// its text says, whatever its name (a comma, a quote, characters JSON
// escapes), the records that share the rest in one member, its end
// carried by the next claim adds its final record (removing its started
// one where it was a member of its own), and a part whose lock is held is
// refused alone.
func TestClaimSendsShared(t *testing.T) {
	n, s, _ := setup(t)
	rc := s.Client(t)
	ctx := context.Background()
	keys := shardKeys(t, "plain", "a,b", `q"uote`, "x<y&z", "held")
	right := engine.Parent{Key: "t~shards:lease-1", Value: "lease-v"}
	parent := engine.Parent{Key: "t~anchor:r1", Value: "anchor-v"}
	rc.Set(ctx, right.Key, right.Value, time.Hour)
	rc.Set(ctx, parent.Key, parent.Value, time.Hour)
	rc.Set(ctx, keys[4].Lock, "someone", time.Hour)

	claim := func(occ int64, fence uint64, ends []engine.FreeRequest) ([]engine.AcquireResult, []engine.FreeRequest, []string) {
		t.Helper()
		running := engine.RunningValue(parent, fmt.Sprintf("value-%d", occ))
		var reqs []engine.ClaimRequest
		var next []engine.FreeRequest
		var texts []string
		for _, k := range keys {
			rec := engine.Record{Job: k.Name, Owner: "r1", Tick: occ, Fence: fence, Start: occ - 1}
			text := rec.Text()
			texts = append(texts, text)
			reqs = append(reqs, engine.ClaimRequest{Right: right, Keys: k, Running: running, Occurrence: occ, Fence: fence,
				Ledger: engine.LedgerWrite{New: text, Score: occ, Cap: 10, Window: time.Hour}})
			rec.End, rec.Result = occ+5, "ok"
			next = append(next, engine.FreeRequest{Keys: k, Running: running,
				Ledger: engine.LedgerWrite{Old: text, New: rec.Text(), Score: occ, Cap: 10, Window: time.Hour}})
		}
		ch := make(chan []engine.AcquireResult, 1)
		n.ClaimAllAsync(ctx, reqs, ends, time.Hour, func(rs []engine.AcquireResult, _ []bool) { ch <- rs })
		return <-ch, next[:4], texts
	}
	rs, ends, texts := claim(1000, 5, nil)
	for i, r := range rs {
		want := engine.Acquired
		if i == 4 {
			want = engine.Held
		}
		if r.Err != nil || r.Reply.Status != want {
			t.Fatalf("claim of %q: %+v; want %v", keys[i].Name, r, want)
		}
	}
	// What the ledger says of each part: its records, as text, by state.
	says := func() map[string][]string {
		t.Helper()
		byJob, _, err := n.ShardLedger(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for job, es := range byJob {
			for _, e := range es {
				out[job] = append(out[job], string(e.State)+"|"+e.Record.Text())
			}
			slices.Sort(out[job])
		}
		return out
	}
	want := map[string][]string{}
	for i, text := range texts[:4] {
		want[keys[i].Name] = []string{"s|" + text}
	}
	if got := says(); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("ledger after the claim:\n%q\nwant\n%q", got, want)
	}
	// The parts whose records share the rest (all but the name with a
	// comma, sent whole) are one member.
	if members := rc.ZRange(ctx, keys[0].Ledger, 0, -1).Val(); len(members) != 2 {
		t.Errorf("ledger after the claim of 4 parts: %q; want the claim's member and the whole one", members)
	}
	for _, k := range keys[:4] {
		st := rc.HMGet(ctx, k.State, "m|"+k.Name, "f|"+k.Name, "r|"+k.Name).Val()
		if st[0] != "1000" || st[1] != "5" || st[2] != engine.RunningValue(parent, "value-1000") {
			t.Errorf("state of %q: %q", k.Name, st)
		}
	}

	rs, _, texts = claim(2000, 6, ends)
	for i, r := range rs[:4] {
		if r.Err != nil || r.Reply.Status != engine.Acquired {
			t.Fatalf("second claim of %q: %+v", keys[i].Name, r)
		}
	}
	// Each part's end adds its final record; its started record stays
	// where it is its claim's, and goes where it was its own.
	prev := want
	want = map[string][]string{}
	for i, e := range ends {
		name := keys[i].Name
		want[name] = []string{"r|" + e.Ledger.New, "s|" + texts[i]}
		if name != keys[1].Name { // "a,b": its own member, removed
			want[name] = append(want[name], prev[name]...)
		}
		slices.Sort(want[name])
	}
	if got := says(); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("ledger after the ends:\n%q\nwant\n%q", got, want)
	}
}

// TestClaimGivenUp: a claim given up (never run) voids its part's started
// record listed in the claim's member where its running value still is,
// the first, a middle and the last name of the member alike, and removes
// a record sent whole; the parts still claimed keep theirs, a free of a
// part whose claim is not here leaves the ledger as it is, and once every
// part is given up the claim's member is gone.
func TestClaimGivenUp(t *testing.T) {
	n, s, _ := setup(t)
	rc := s.Client(t)
	ctx := context.Background()
	keys := shardKeys(t, "first", `q"uote`, "mid", "last", "a,b")
	right := engine.Parent{Key: "t~shards:lease-1", Value: "lease-v"}
	parent := engine.Parent{Key: "t~anchor:r1", Value: "anchor-v"}
	rc.Set(ctx, right.Key, right.Value, time.Hour)
	rc.Set(ctx, parent.Key, parent.Value, time.Hour)
	const occ = 1000
	running := engine.RunningValue(parent, "value")
	var reqs []engine.ClaimRequest
	var frees []engine.FreeRequest
	for _, k := range keys {
		text := engine.Record{Job: k.Name, Owner: "r1", Tick: occ, Start: occ - 1}.Text()
		reqs = append(reqs, engine.ClaimRequest{Right: right, Keys: k, Running: running, Occurrence: occ,
			Ledger: engine.LedgerWrite{New: text, Score: occ, Cap: 10, Window: time.Hour}})
		frees = append(frees, engine.FreeRequest{Keys: k, Running: running, Occurrence: occ,
			Ledger: engine.LedgerWrite{Old: text, Score: occ, Cap: 10, Window: time.Hour}})
	}
	ch := make(chan []engine.AcquireResult, 1)
	n.ClaimAllAsync(ctx, reqs, nil, time.Hour, func(rs []engine.AcquireResult, _ []bool) { ch <- rs })
	for i, r := range <-ch {
		if r.Err != nil || r.Reply.Status != engine.Acquired {
			t.Fatalf("claim of %q: %+v", keys[i].Name, r)
		}
	}
	started := func() []string {
		t.Helper()
		byJob, _, err := n.ShardLedger(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for job, es := range byJob {
			for _, e := range es {
				if e.State == engine.RecordStarted {
					out = append(out, job)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	giveUp := func(i int, running string) {
		t.Helper()
		f := frees[i]
		f.Running = running
		ch := make(chan []engine.CommitResult, 1)
		n.FreeAllAsync(ctx, []engine.FreeRequest{f}, func(rs []engine.CommitResult) { ch <- rs })
		if rs := <-ch; rs[0].Err != nil {
			t.Fatalf("free of %q: %v", keys[i].Name, rs[0].Err)
		}
	}
	names := func(is ...int) []string {
		var out []string
		for _, i := range is {
			out = append(out, keys[i].Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := started(), names(0, 1, 2, 3, 4); !slices.Equal(got, want) {
		t.Fatalf("started after the claim: %q; want %q", got, want)
	}
	giveUp(2, engine.RunningValue(parent, "another")) // not its claim's running value: nothing changes
	if got, want := started(), names(0, 1, 2, 3, 4); !slices.Equal(got, want) {
		t.Fatalf("started after a free of another claim: %q; want %q", got, want)
	}
	for _, step := range []struct {
		give int
		left []int
	}{{2, []int{0, 1, 3, 4}}, {0, []int{1, 3, 4}}, {3, []int{1, 4}}, {4, []int{1}}, {1, nil}} {
		giveUp(step.give, running)
		if got, want := started(), names(step.left...); !slices.Equal(got, want) {
			t.Fatalf("started after %q was given up: %q; want %q (ledger %q)", keys[step.give].Name, got, want, rc.ZRange(ctx, keys[0].Ledger, 0, -1).Val())
		}
	}
	// A claim none of whose parts stands leaves nothing: a failed tick
	// must not push real records out of the ledger.
	if members := rc.ZRange(ctx, keys[0].Ledger, 0, -1).Val(); len(members) != 0 {
		t.Errorf("ledger after every claim was given up: %q; want empty", members)
	}
}

// shardKeys returns the keys of locks of one shard, under the prefix "t",
// one per base: the base and the first suffix "-i" that puts it in the
// first one's shard.
func shardKeys(t *testing.T, bases ...string) []engine.LockKeys {
	t.Helper()
	ks, _ := engine.NewKeyspace("t")
	var keys []engine.LockKeys
	for _, base := range bases {
		for i := 0; ; i++ {
			name := fmt.Sprintf("%s-%d", base, i)
			if len(keys) == 0 || engine.ShardOf(name) == engine.ShardOf(keys[0].Name) {
				k, err := ks.Lock(name)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
				break
			}
		}
	}
	return keys
}
