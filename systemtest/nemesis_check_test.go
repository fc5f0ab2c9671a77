package systemtest_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fault is one thing the nemesis did, over [From, To] (From == To for an
// instant one). Node and Replica are -1 when the fault is not about one.
type fault struct {
	Kind     string // node-down, node-pause, node-restart, cut, latency, replica-pause, replica-down, corrupt, clock
	Node     int
	Replica  int
	From, To time.Time
}

func (f fault) String() string {
	s := f.Kind
	if f.Node >= 0 {
		s += fmt.Sprintf(" node %d", f.Node)
	}
	if f.Replica >= 0 {
		s += fmt.Sprintf(" replica %d", f.Replica)
	}
	return fmt.Sprintf("%s [%s, %s]", s, f.From.Format("15:04:05.000"), f.To.Format("15:04:05.000"))
}

// blocksVotes reports whether f takes node i's vote from replica r at t.
func (f fault) blocksVotes(i, r int, t time.Time) bool {
	if t.Before(f.From) || t.After(f.To) || f.Node != i {
		return false
	}
	switch f.Kind {
	case "node-down", "node-pause":
		return true
	case "cut":
		return f.Replica == r
	}
	return false
}

// run is one run of a job, pieced together from its replica's records.
type run struct {
	proc       string // the replica process (an incarnation of a replica)
	replica    int
	job        string
	tick       int64 // unix ms
	fence      uint64
	start, end time.Time // end: the process's death if it died first
	cancel     time.Time // zero if the context was never cancelled
	writes     []record
	ended      bool
}

// world is what the checker knows besides the runs: the faults, when each
// node's server (re)started, and when each replica process lived.
type world struct {
	nodes, quorum int
	maxTTL, grace time.Duration
	faults        []fault
	starts        [][]time.Time // per node: the times its server was (re)started, in order
	procs         map[string]proc
	from, to      time.Time // the span whose ticks are checked
	bulk          int       // the bulk jobs the replicas ran (bulkJobs)
}

// proc is one replica process's life.
type proc struct {
	replica     int
	start, stop time.Time // stop: zero while it lives
}

// history is every record of every replica process, by process.
type historyOf map[string][]record

// checkHistory proves the nemesis' claims from the history alone and
// returns every violation found, each with the slice of history that shows
// it.
func checkHistory(w world, h historyOf) []string {
	runs, skips := piece(w, h)
	var out []string
	out = append(out, checkOnce(runs)...)
	out = append(out, checkFenceOrder(runs)...)
	out = append(out, checkOverlapAndFencing(w, runs)...)
	out = append(out, checkMajority(w, runs)...)
	out = append(out, checkMisses(w, runs, skips)...)
	return out
}

// piece assembles the runs and the skips from the records.
func piece(w world, h historyOf) ([]*run, []record) {
	var runs []*run
	var skips []record
	for name, recs := range h {
		byKey := map[string]*run{}
		for _, rec := range recs {
			key := fmt.Sprintf("%s %d", rec.Job, rec.Tick)
			t := time.Unix(0, rec.T)
			r := byKey[key]
			switch rec.Ev {
			case "skip":
				skips = append(skips, rec)
				continue
			case "start":
				r = &run{proc: name, replica: w.procs[name].replica, job: rec.Job, tick: rec.Tick, fence: rec.Fence, start: t}
				byKey[key] = r
				runs = append(runs, r)
				continue
			}
			if r == nil {
				continue
			}
			switch rec.Ev {
			case "cancel":
				r.cancel = t
			case "end":
				r.end, r.ended = t, true
			case "write":
				r.writes = append(r.writes, rec)
			}
		}
		for _, r := range byKey {
			if !r.ended {
				r.end = w.procs[name].stop // killed mid-run; zero if it still ran at the end
				if r.end.IsZero() {
					r.end = w.to.Add(time.Hour)
				}
			}
		}
	}
	slices.SortFunc(runs, func(a, b *run) int { return cmp.Or(cmp.Compare(a.job, b.job), a.start.Compare(b.start)) })
	return runs, skips
}

// checkOnce: no (job, tick) ran twice.
func checkOnce(runs []*run) []string {
	var out []string
	seen := map[string]*run{}
	for _, r := range runs {
		key := fmt.Sprintf("%s %d", r.job, r.tick)
		if prev := seen[key]; prev != nil {
			out = append(out, fmt.Sprintf("%s tick %s ran twice: %s and %s", r.job, tickString(r.tick), prev, r))
		}
		seen[key] = r
	}
	return out
}

// checkFenceOrder: fences strictly increase per job in acquisition order,
// which is tick order (each tick runs at most once, and a later tick's
// lock is won after an earlier one's).
func checkFenceOrder(runs []*run) []string {
	var out []string
	byTick := slices.Clone(runs)
	slices.SortFunc(byTick, func(a, b *run) int { return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.tick, b.tick)) })
	for i := 1; i < len(byTick); i++ {
		a, b := byTick[i-1], byTick[i]
		if a.job == b.job && b.fence <= a.fence {
			out = append(out, fmt.Sprintf("%s: fence did not increase: %s, then %s", a.job, a, b))
		}
	}
	return out
}

// cancelSlack is how much later than a newer run's start an older run's
// cancellation may be recorded: the record is written by a goroutine woken
// by the cancellation, after it happened.
const cancelSlack = 25 * time.Millisecond

// checkOverlapAndFencing: of two runs of a job, the older is the one with
// the smaller fence (won first). It must not have been running once the
// newer one started unless its context had been cancelled first, or its
// process was paused between winning its lease and then (the fault fencing
// is for: a paused process wakes up still running); and the store must
// have refused every write it sent after the newer one had started.
func checkOverlapAndFencing(w world, runs []*run) []string {
	var out []string
	for i, x := range runs {
		for _, y := range runs[i+1:] {
			if y.job != x.job {
				break
			}
			old, cur := x, y
			if y.fence < x.fence {
				old, cur = y, x
			}
			for _, wr := range old.writes {
				if wr.OK && time.Unix(0, wr.T).After(cur.start) {
					out = append(out, fmt.Sprintf("%s: stale write accepted: write %d of %s sent at %s, after %s had started",
						old.job, wr.Seq, old, time.Unix(0, wr.T).Format("15:04:05.000"), cur))
				}
			}
			if !old.end.After(cur.start) {
				continue
			}
			cancelled := !old.cancel.IsZero() && !old.cancel.After(cur.start.Add(cancelSlack))
			if !cancelled && !w.paused(old.replica, old.won(), later(old.start, cur.start)) {
				out = append(out, fmt.Sprintf("%s: runs overlapped without the older one cancelled first: %s and %s", old.job, old, cur))
			}
		}
	}
	return out
}

// won returns about when r's lease was won: its fence, the winner's clock
// in microseconds unless a counter ran ahead of it, or else its start less
// the longest lead.
func (r *run) won() time.Time {
	t := time.UnixMicro(int64(r.fence))
	if d := r.start.Sub(t); d < 0 || d > time.Minute {
		return r.start.Add(-nemesisMaxTTL)
	}
	return t
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// paused reports whether replica r was paused at some time in [from, to].
func (w world) paused(r int, from, to time.Time) bool {
	return slices.ContainsFunc(w.faults, func(f fault) bool {
		return f.Kind == "replica-pause" && f.Replica == r && !f.From.After(to) && !f.To.Before(from)
	})
}

// checkMajority: nothing ran unless, at some moment in the second and a
// half before it started, a majority of nodes could vote for its tick to
// its replica: up, not paused, reachable, out of the restart quarantine,
// and started (restarted) early enough to vouch for the tick. The margins
// are a second more lenient than the client's, so that only a real breach
// is reported.
func checkMajority(w world, runs []*run) []string {
	var out []string
	for _, r := range runs {
		ok := false
		for d := time.Duration(0); d <= 1500*time.Millisecond && !ok; d += 100 * time.Millisecond {
			ok = w.voters(r.replica, r.start.Add(-d), r.tick) >= w.quorum
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s ran with no majority of nodes able to vote for it: %s; faults: %v",
				r.job, r, w.faultsAround(r.start.Add(-5*time.Second), r.start)))
		}
	}
	return out
}

// voters counts the nodes able to vote for tick (unix ms) to replica r at t.
func (w world) voters(r int, t time.Time, tick int64) int {
	n := 0
	for i := range w.nodes {
		var started time.Time
		for _, s := range w.starts[i] {
			if !s.After(t) {
				started = s
			}
		}
		switch {
		case started.IsZero(),
			t.Before(started.Add(w.maxTTL)),
			time.UnixMilli(tick).Before(started.Add(w.maxTTL + 2*time.Second)),
			slices.ContainsFunc(w.faults, func(f fault) bool { return f.blocksVotes(i, r, t) }):
			continue
		}
		n++
	}
	return n
}

// checkMisses: every skip has a reason; every tick that did not run was
// reported skipped by some replica, unless none lived unpaused through its
// misfire grace; and every tick of a job shorter than its interval due in
// a calm stretch (no fault for the quarantine before it and through its
// grace) ran.
func checkMisses(w world, runs []*run, skips []record) []string {
	var out []string
	ran, skipped, why := map[string]bool{}, map[string]bool{}, map[string][]string{}
	for _, r := range runs {
		ran[fmt.Sprintf("%s %d", r.job, r.tick)] = true
	}
	for _, s := range skips {
		if s.Reason == "" || strings.HasPrefix(s.Reason, "SkipReason(") {
			out = append(out, fmt.Sprintf("%s tick %s skipped by %s without a reason", s.Job, tickString(s.Tick), s.Replica))
		}
		key := fmt.Sprintf("%s %d", s.Job, s.Tick)
		skipped[key] = true
		why[key] = append(why[key], fmt.Sprintf("%s: %s (%s)", s.Replica, s.Reason, s.Err))
	}
	for _, j := range nemesisJobs {
		job := j.name
		for t := w.from.Truncate(j.every).Add(j.every); t.Before(w.to); t = t.Add(j.every) {
			key := fmt.Sprintf("%s %d", job, t.UnixMilli())
			switch {
			case ran[key]:
			case job != "long" && w.calm(t.Add(-w.maxTTL-4*time.Second), t.Add(w.grace+time.Second)):
				out = append(out, fmt.Sprintf("%s tick %s did not run in a calm stretch; skips: %q", job, tickString(t.UnixMilli()), why[key]))
			case !skipped[key] && w.someoneWatched(t, t.Add(w.grace+2*time.Second)):
				out = append(out, fmt.Sprintf("%s tick %s neither ran nor was reported skipped", job, tickString(t.UnixMilli())))
			}
		}
	}
	// A bulk job's tick, due at its own second of each 5 minutes, is held
	// to the same: run in a calm stretch, and never neither run nor
	// reported.
	for _, j := range bulkJobs(w.bulk) {
		for t := w.from.Truncate(j.every).Add(j.at); t.Before(w.to); t = t.Add(j.every) {
			key := fmt.Sprintf("%s %d", j.name, t.UnixMilli())
			switch {
			case t.Before(w.from) || ran[key]:
			case w.calm(t.Add(-w.maxTTL-4*time.Second), t.Add(w.grace+time.Second)):
				out = append(out, fmt.Sprintf("%s tick %s did not run in a calm stretch; skips: %q; alive: %s; faults before: %v", j.name, tickString(t.UnixMilli()), why[key], w.alive(t), w.faultsAround(t.Add(-20*time.Second), t)))
			case !skipped[key] && w.someoneWatched(t, t.Add(w.grace+2*time.Second)):
				out = append(out, fmt.Sprintf("%s tick %s neither ran nor was reported skipped", j.name, tickString(t.UnixMilli())))
			}
		}
	}
	return out
}

// calm reports whether no fault touched [from, to], no node (re)started in
// it, and no replica process stopped or started in it.
func (w world) calm(from, to time.Time) bool {
	in := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	for _, f := range w.faults {
		if f.Kind != "clock" && !f.From.After(to) && !f.To.Before(from) {
			return false
		}
	}
	for _, ss := range w.starts {
		if slices.ContainsFunc(ss, in) {
			return false
		}
	}
	for _, p := range w.procs {
		if in(p.start) || (!p.stop.IsZero() && in(p.stop)) {
			return false
		}
	}
	return true
}

// someoneWatched reports whether some replica process lived through
// [from, to] without being paused.
func (w world) someoneWatched(from, to time.Time) bool {
	for _, p := range w.procs {
		if !p.start.After(from) && (p.stop.IsZero() || p.stop.After(to)) && !w.paused(p.replica, from, to) {
			return true
		}
	}
	return false
}

// alive names the replica processes alive at t, with their lives.
func (w world) alive(t time.Time) []string {
	var out []string
	for name, p := range w.procs {
		if !p.start.After(t) && (p.stop.IsZero() || p.stop.After(t)) {
			out = append(out, fmt.Sprintf("%s (from %s)", name, p.start.Format("15:04:05.000")))
		}
	}
	slices.Sort(out)
	return out
}

// faultsAround returns the faults touching [from, to].
func (w world) faultsAround(from, to time.Time) []fault {
	var out []fault
	for _, f := range w.faults {
		if !f.From.After(to) && !f.To.Before(from) {
			out = append(out, f)
		}
	}
	return out
}

func (r *run) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s tick %s fence %d on %s: start %s", r.job, tickString(r.tick), r.fence, r.proc, r.start.Format("15:04:05.000"))
	if !r.cancel.IsZero() {
		fmt.Fprintf(&b, ", cancelled %s", r.cancel.Format("15:04:05.000"))
	}
	for _, wr := range r.writes {
		fmt.Fprintf(&b, ", write %d at %s ok=%v", wr.Seq, time.Unix(0, wr.T).Format("15:04:05.000"), wr.OK)
	}
	if r.ended {
		fmt.Fprintf(&b, ", end %s]", r.end.Format("15:04:05.000"))
	} else {
		fmt.Fprintf(&b, ", no end: process stopped %s]", r.end.Format("15:04:05.000"))
	}
	return b.String()
}

func tickString(ms int64) string { return time.UnixMilli(ms).Format("15:04:05") }

// TestNemesisChecker: the checker passes a clean history and reports each
// kind of violation planted in it.
func TestNemesisChecker(t *testing.T) {
	t0 := time.Now().Truncate(time.Second).Add(-time.Minute)
	clean := func() (world, historyOf) {
		w := world{nodes: 5, quorum: 3, maxTTL: 2 * time.Second, grace: 3 * time.Second,
			starts: make([][]time.Time, 5), from: t0, to: t0.Add(10 * time.Second),
			procs: map[string]proc{"r0": {replica: 0, start: t0.Add(-time.Hour)}, "r1": {replica: 1, start: t0.Add(-time.Hour)}}}
		for i := range w.starts {
			w.starts[i] = []time.Time{t0.Add(-time.Hour)}
		}
		h := historyOf{}
		for k := range 12 {
			tick := t0.Add(time.Duration(k) * time.Second)
			proc := []string{"r0", "r1"}[k%2]
			at := func(ev string, d time.Duration) record {
				return record{Ev: ev, Replica: proc, Job: "short", Tick: tick.UnixMilli(), Fence: uint64(100 + k), T: tick.Add(d).UnixNano()}
			}
			wr := at("write", 10*time.Millisecond)
			wr.OK = true
			h[proc] = append(h[proc], at("start", 5*time.Millisecond), wr, at("end", 25*time.Millisecond),
				record{Ev: "skip", Replica: "r0", Job: "long", Tick: tick.UnixMilli(), T: tick.UnixNano(), Reason: "overlap"})
			if tick.Truncate(15 * time.Second).Equal(tick) {
				rare := record{Ev: "start", Replica: "r0", Job: "rare", Tick: tick.UnixMilli(), Fence: uint64(1000 + k), T: tick.Add(time.Millisecond).UnixNano()}
				h["r0"] = append(h["r0"], rare)
				rare.Ev, rare.T = "end", tick.Add(2*time.Millisecond).UnixNano()
				h["r0"] = append(h["r0"], rare)
			}
		}
		return w, h
	}
	// find returns the index of proc's record of kind ev for the short
	// job's tick k.
	find := func(h historyOf, proc, ev string, k int) int {
		tick := t0.Add(time.Duration(k) * time.Second).UnixMilli()
		for i, r := range h[proc] {
			if r.Ev == ev && r.Job == "short" && r.Tick == tick {
				return i
			}
		}
		t.Fatalf("no %s of tick %d on %s", ev, k, proc)
		return -1
	}
	at := func(d time.Duration) int64 { return t0.Add(d).UnixNano() }
	cases := []struct {
		name  string
		plant func(w *world, h historyOf)
		want  string // "" for no violation
	}{
		{"clean", func(*world, historyOf) {}, ""},
		{"twice", func(_ *world, h historyOf) {
			h["r0"] = append(h["r0"], record{Ev: "start", Replica: "r0", Job: "short", Tick: t0.Add(3 * time.Second).UnixMilli(), Fence: 200, T: at(3100 * time.Millisecond)})
		}, "ran twice"},
		{"fence", func(_ *world, h historyOf) { h["r1"][find(h, "r1", "start", 5)].Fence = 50 }, "fence did not increase"},
		{"overlap", func(_ *world, h historyOf) { h["r0"][find(h, "r0", "end", 4)].T = at(5500 * time.Millisecond) }, "overlapped"},
		{"overlap after cancel", func(_ *world, h historyOf) {
			h["r0"][find(h, "r0", "end", 4)].T = at(5500 * time.Millisecond)
			h["r0"] = append(h["r0"], record{Ev: "cancel", Replica: "r0", Job: "short", Tick: t0.Add(4 * time.Second).UnixMilli(), T: at(4900 * time.Millisecond)})
		}, ""},
		{"overlap while paused", func(w *world, h historyOf) {
			h["r0"][find(h, "r0", "end", 4)].T = at(5500 * time.Millisecond)
			w.faults = append(w.faults, fault{Kind: "replica-pause", Node: -1, Replica: 0, From: t0.Add(4100 * time.Millisecond), To: t0.Add(5400 * time.Millisecond)})
		}, ""},
		{"older run starting after a newer one", func(_ *world, h historyOf) {
			h["r1"][find(h, "r1", "start", 5)].T = at(6500 * time.Millisecond)
			h["r1"][find(h, "r1", "write", 5)].T = at(6500 * time.Millisecond)
			h["r1"][find(h, "r1", "end", 5)].T = at(6500 * time.Millisecond)
		}, "overlapped"},
		{"older run starting after a newer one, paused, its write refused", func(w *world, h historyOf) {
			h["r1"][find(h, "r1", "start", 5)].T = at(6500 * time.Millisecond)
			h["r1"][find(h, "r1", "write", 5)].T = at(6500 * time.Millisecond)
			h["r1"][find(h, "r1", "write", 5)].OK = false
			h["r1"][find(h, "r1", "end", 5)].T = at(6500 * time.Millisecond)
			w.faults = append(w.faults, fault{Kind: "replica-pause", Node: -1, Replica: 1, From: t0.Add(4900 * time.Millisecond), To: t0.Add(6400 * time.Millisecond)})
		}, ""},
		{"older run starting after a newer one, paused, its write accepted", func(w *world, h historyOf) {
			h["r1"][find(h, "r1", "start", 5)].T = at(6500 * time.Millisecond)
			h["r1"][find(h, "r1", "write", 5)].T = at(6500 * time.Millisecond)
			h["r1"][find(h, "r1", "end", 5)].T = at(6500 * time.Millisecond)
			w.faults = append(w.faults, fault{Kind: "replica-pause", Node: -1, Replica: 1, From: t0.Add(4900 * time.Millisecond), To: t0.Add(6400 * time.Millisecond)})
		}, "stale write accepted"},
		{"stale write", func(_ *world, h historyOf) {
			h["r0"][find(h, "r0", "write", 4)].T = at(5100 * time.Millisecond)
		}, "stale write accepted"},
		{"no majority", func(w *world, _ historyOf) {
			for i := range 3 {
				w.faults = append(w.faults, fault{Kind: "node-down", Node: i, Replica: -1, From: t0.Add(5 * time.Second), To: t0.Add(8 * time.Second)})
			}
		}, "no majority"},
		{"quarantine", func(w *world, _ historyOf) {
			for i := range 3 {
				w.starts[i] = append(w.starts[i], t0.Add(6*time.Second))
			}
		}, "no majority"},
		{"missed when calm", func(_ *world, h historyOf) {
			h["r1"] = slices.Delete(h["r1"], find(h, "r1", "start", 7), find(h, "r1", "end", 7)+1)
		}, "did not run in a calm stretch"},
		{"silent miss", func(w *world, h historyOf) {
			h["r1"] = slices.Delete(h["r1"], find(h, "r1", "start", 7), find(h, "r1", "end", 7)+1)
			w.faults = append(w.faults, fault{Kind: "latency", Node: 0, Replica: 1, From: t0.Add(6 * time.Second), To: t0.Add(8 * time.Second)})
		}, "neither ran nor was reported skipped"},
		{"skip without reason", func(_ *world, h historyOf) { h["r0"][3].Reason = "" }, "without a reason"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, h := clean()
			tc.plant(&w, h)
			got := checkHistory(w, h)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("violations in a history without any: %q", got)
			case tc.want != "" && !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, tc.want) }):
				t.Errorf("planted %q, got %q", tc.want, got)
			}
		})
	}
}
