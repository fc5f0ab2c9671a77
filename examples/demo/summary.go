package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Margins of the verification.
const (
	// faultMarginBefore and lockTTL+faultMarginAfterTTL bound the ticks
	// around a fault that are not checked for misses: after a fault, a
	// lock taken by a replica that was cut off, or a partial vote on a
	// node that died, may block a tick until the lock's TTL runs out, and
	// clients need a moment to reconnect to a restarted node.
	faultMarginBefore   = 500 * time.Millisecond
	faultMarginAfterTTL = 500 * time.Millisecond
	// overlapSlack is how long after a run's end its lock may still be
	// held (the release itself takes a round trip).
	overlapSlack = 500 * time.Millisecond
)

// Limits of the list of misses in the summary.
const (
	maxMissesListed = 12
	maxMissTallies  = 2
)

// verifyParams says which ticks are verified and how.
type verifyParams struct {
	from, to      time.Time // the ticks verified, inclusive
	quorum, nodes int
	before, after time.Duration // the margins around faults
}

// summary is the verdict on what ran.
type summary struct {
	verifyParams
	jobs int

	due         int // ticks in the window, all jobs
	ran         int // of those, ticks run at least once
	runs        int // runs of any tick, whole demo
	duplicates  int // extra runs of a tick already run, whole demo
	misses      int
	splitVotes  int            // misses where each replica was told another held the lock
	notChecked  map[string]int // ticks in the window not run, not counted as misses, by reason
	missList    []missRec
	dupList     []string
	leasesLost  []string
	skips       map[string]int
	retries     int
	fencesOK    bool
	fenceErrs   []string
	perReplica  map[string]int
	medianDelay time.Duration
	maxDelay    time.Duration
	faults      []fault
	perJob      []jobStats
}

// jobStats are one job's numbers in the window.
type jobStats struct {
	name             string
	due, ran, misses int
	fencesOK         bool
}

// missRec describes a miss: what the replicas reported, and the tallies
// of the failed lock attempts made for the tick.
type missRec struct {
	line    string
	tallies []string
	split   bool // every replica was refused as if another held the lock
}

// Reasons a tick that did not run is not a miss.
const (
	exclQuorum  = "quorum down"
	exclFault   = "near a fault"
	exclOverlap = "previous run still going"
)

// ok reports whether the demo passed: something ran, no tick ran twice,
// none was missed and fencing tokens only went up.
func (s summary) ok() bool {
	return s.runs > 0 && s.duplicates == 0 && s.misses == 0 && s.fencesOK
}

// summarize verifies what was recorded.
func (r *recorder) summarize(p verifyParams) summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := summary{
		verifyParams: p,
		jobs:         len(r.jobs),
		notChecked:   make(map[string]int),
		skips:        maps.Clone(r.skips),
		retries:      r.retries,
		fencesOK:     true,
		perReplica:   make(map[string]int),
		faults:       slices.Clone(r.faults),
	}

	byJob := make(map[string][]*runRec)
	for _, rr := range r.runs {
		byJob[rr.Job] = append(byJob[rr.Job], rr)
		s.runs++
		s.perReplica[rr.Replica]++
		if rr.Result == "lock_lost" || rr.Outcome == outcomeLockLost {
			s.leasesLost = append(s.leasesLost, fmt.Sprintf("%s tick %s on %s (fence %d): lease lost after %v, result %s",
				rr.Job, clock(rr.Tick), rr.Replica, rr.Fence, rr.End.Sub(rr.Start).Round(10*time.Millisecond), rr.Result))
		}
	}
	slices.Sort(s.leasesLost)

	var delays []time.Duration
	for _, job := range r.jobs {
		js := jobStats{name: job, fencesOK: true}
		runs := byJob[job]
		slices.SortFunc(runs, func(a, b *runRec) int {
			return cmp.Or(a.Tick.Compare(b.Tick), cmp.Compare(a.Fence, b.Fence))
		})
		// Duplicates and fences, over the whole demo.
		for i := 1; i < len(runs); i++ {
			prev, cur := runs[i-1], runs[i]
			if prev.Tick.Equal(cur.Tick) {
				s.duplicates++
				s.dupList = append(s.dupList, fmt.Sprintf("%s tick %s ran on %s and on %s", job, clock(cur.Tick), prev.Replica, cur.Replica))
			}
			if cur.Fence <= prev.Fence {
				s.fencesOK, js.fencesOK = false, false
				s.fenceErrs = append(s.fenceErrs, fmt.Sprintf("%s: fence %d of tick %s is not above %d of tick %s",
					job, cur.Fence, clock(cur.Tick), prev.Fence, clock(prev.Tick)))
			}
		}
		// Ticks in the window.
		for t := p.from; !t.After(p.to); t = t.Add(time.Second) {
			s.due++
			js.due++
			tr := r.ticks[keyOf(job, t)]
			if tr != nil && len(tr.runs) > 0 {
				s.ran++
				js.ran++
				for _, rr := range tr.runs {
					delays = append(delays, rr.StartDelay)
				}
				continue
			}
			switch {
			case r.upAtLocked(t) < p.quorum:
				s.notChecked[exclQuorum]++
			case r.nearFaultLocked(t, p.before, p.after):
				s.notChecked[exclFault]++
			case overlapped(runs, t):
				s.notChecked[exclOverlap]++
			default:
				s.misses++
				js.misses++
				var seen []string
				if tr != nil {
					for rep, why := range tr.skips {
						seen = append(seen, rep+" "+why)
					}
				}
				slices.Sort(seen)
				m := missRec{line: fmt.Sprintf("%s tick %s: not run; replicas reported: %s",
					job, clock(t), cmp.Or(strings.Join(seen, ", "), "nothing"))}
				if tr != nil && heldByNobody(tr.skips) {
					m.split = true
					s.splitVotes++
					m.line += "\n                  every replica that reached the nodes was told another one held the lock for this tick, yet none ran it"
				}
				for _, f := range r.failuresLocked(job, t, t.Add(time.Second)) {
					m.tallies = append(m.tallies, fmt.Sprintf("%s %s: %s", clockMilli(f.at), f.replica, f.tally))
				}
				s.missList = append(s.missList, m)
			}
		}
		s.perJob = append(s.perJob, js)
	}
	if len(delays) > 0 {
		slices.Sort(delays)
		s.medianDelay, s.maxDelay = delays[len(delays)/2], delays[len(delays)-1]
	}
	return s
}

// heldByNobody reports whether every replica that reached the nodes about a
// tick (all but those that got no answer) was told another one held its
// lock for that very tick.
func heldByNobody(skips map[string]string) bool {
	held := 0
	for _, why := range skips {
		switch why {
		case "held":
			held++
		case "no_quorum":
		default:
			return false
		}
	}
	return held > 0
}

// nearFaultLocked reports whether t is within before/after a fault.
func (r *recorder) nearFaultLocked(t time.Time, before, after time.Duration) bool {
	for _, f := range r.faults {
		if !t.Before(f.at.Add(-before)) && !t.After(f.at.Add(after)) {
			return true
		}
	}
	return false
}

// overlapped reports whether an earlier run of the job (runs, in tick
// order) may still have held the lock at tick t.
func overlapped(runs []*runRec, t time.Time) bool {
	for _, rr := range runs {
		if !rr.Tick.Before(t) {
			break
		}
		if rr.End.IsZero() || !t.After(rr.End.Add(overlapSlack)) {
			return true
		}
	}
	return false
}

// write prints the summary.
func (s summary) write(w io.Writer) {
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAILED"
	}
	perJob := 0
	if s.jobs > 0 {
		perJob = s.due / s.jobs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n== verification, from what actually ran ==\n")
	fmt.Fprintf(&b, "window        ticks %s to %s: %d per job, %d jobs\n", clock(s.from), clock(s.to), perJob, s.jobs)
	fmt.Fprintf(&b, "ticks due     %d\n", s.due)
	fmt.Fprintf(&b, "ticks run     %d in the window; %d runs in all (%s)\n", s.ran, s.runs, counts(s.perReplica))
	for _, j := range s.perJob {
		fmt.Fprintf(&b, "  %-10s  %d due, %d run, %d missed, fences %s\n", j.name, j.due, j.ran, j.misses, verdict(j.fencesOK))
	}
	fmt.Fprintf(&b, "duplicates    %d   two runs of the same job and tick: %s\n", s.duplicates, verdict(s.duplicates == 0))
	for _, d := range s.dupList {
		fmt.Fprintf(&b, "                - %s\n", d)
	}
	fmt.Fprintf(&b, "misses        %d   while a quorum was up: %s\n", s.misses, verdict(s.misses == 0))
	for i, m := range s.missList {
		if i == maxMissesListed {
			fmt.Fprintf(&b, "                - and %d more\n", len(s.missList)-i)
			break
		}
		fmt.Fprintf(&b, "                - %s\n", m.line)
		if i < maxMissTallies {
			for _, t := range m.tallies {
				fmt.Fprintf(&b, "                  %s\n", t)
			}
		}
	}
	if len(s.missList) > maxMissTallies {
		fmt.Fprintf(&b, "                  (lock attempt tallies shown for the first %d misses only)\n", maxMissTallies)
	}
	if s.splitVotes > 0 {
		fmt.Fprintf(&b, "                %d of these are split votes: each replica won a minority of the nodes and\n", s.splitVotes)
		fmt.Fprintf(&b, "                was refused by the others, and each took the refusals, though they came\n")
		fmt.Fprintf(&b, "                from different replicas, as a final \"held by another owner\" and gave up.\n")
	}
	fmt.Fprintf(&b, "not checked   %d ticks not run but not misses: %s\n", sum(s.notChecked), countsOr(s.notChecked, "none"))
	fmt.Fprintf(&b, "leases lost   %d\n", len(s.leasesLost))
	for _, l := range s.leasesLost {
		fmt.Fprintf(&b, "                - %s\n", l)
	}
	fmt.Fprintf(&b, "skips         %s (each replica reports each tick it did not run)\n", countsOr(s.skips, "none"))
	fmt.Fprintf(&b, "lock retries  %d undecided attempts retried\n", s.retries)
	fmt.Fprintf(&b, "fences        strictly increasing in tick order for every job: %s\n", verdict(s.fencesOK))
	for _, f := range s.fenceErrs {
		fmt.Fprintf(&b, "                - %s\n", f)
	}
	fmt.Fprintf(&b, "start delay   median %v, max %v (from the tick to the job's start)\n",
		s.medianDelay.Round(100*time.Microsecond), s.maxDelay.Round(time.Millisecond))
	if len(s.faults) > 0 {
		var fs []string
		for _, f := range s.faults {
			fs = append(fs, fmt.Sprintf("%s %s", clockMilli(f.at), f.what))
		}
		fmt.Fprintf(&b, "faults        %s\n", strings.Join(fs, "; "))
	}
	fmt.Fprintf(&b, "\nA miss is a tick in the window that no replica ran although at that tick\n"+
		"at least %d of %d nodes were up, the tick was neither less than %v before\n"+
		"nor less than %v after a fault (node killed or restarted, replica stalled\n"+
		"or resumed), and no earlier run of the same job was still going (until %v\n"+
		"after its end). Ticks not run for one of these reasons are not checked.\n",
		s.quorum, s.nodes, s.before, s.after, overlapSlack)
	if s.ok() {
		fmt.Fprintf(&b, "\nPASS: %d runs, no duplicate, no miss, fences monotonic\n", s.runs)
	} else {
		fmt.Fprintf(&b, "\nFAIL: %d runs, %d duplicates, %d misses (%d split votes), fences monotonic: %v\n",
			s.runs, s.duplicates, s.misses, s.splitVotes, s.fencesOK)
	}
	_, _ = io.WriteString(w, b.String())
}

// counts formats a map of counts, sorted by key.
func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func countsOr(m map[string]int, none string) string {
	if len(m) == 0 {
		return none
	}
	return counts(m)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// clock formats a tick in local time.
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

// clockMilli formats a moment in local time, to the millisecond.
func clockMilli(t time.Time) string { return t.Local().Format("15:04:05.000") }
