package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/bench/internal/table"
	"github.com/redcron/redcron/internal/engine"
)

// crashKilled is the replica -crash kills in each round.
const crashKilled = 0

// crashStats is what a round with -crash measured of the crash: from the
// instant the killed replica was sent SIGKILL, only the survivors run
// ticks; the job-ticks none of them ran, the jobs those were of, and
// until when. The killed replica's records die with it: before the
// crash, a job-tick no survivor ran may have been its, and is not
// counted as missed.
type crashStats struct {
	on     bool
	at     time.Time     // when the killed replica was sent SIGKILL
	offset time.Duration // at, from the window's first tick
	first  int64         // the first tick at or after at (unix seconds)
	after  int           // job-ticks due at the window's ticks from first on
	missed int           // of those, run by no survivor (by the events or by the jobs' own records)
	// missedJobs is the number of jobs with a tick missed from first on.
	missedJobs int
	// killedJobs is the number of jobs the killed replica claimed when it
	// crashed, as far as the survivors' records tell: those of the shards
	// (engine.ShardOf, as the replicas' gates hash them) none of whose jobs
	// a survivor ran at the last window tick before the crash. A shard
	// rather than each job, and that tick rather than every one before
	// the crash, so that a survivor's own misses (overload, the window's
	// first ticks) do not count as the killed replica's. othersMissed is
	// the number of missed jobs that are not among them: a stall beyond
	// the killed replica's share.
	killedJobs, othersMissed int
	// lastMiss is the last tick (unix seconds) at which a job was missed,
	// 0 without one; stall is the time from the crash to it (0 without).
	lastMiss int64
	stall    time.Duration
	// recovered reports that the window's last tick missed no job.
	recovered bool
	// byTick is the job-ticks missed at each window tick from first on:
	// the killed replica's jobs stall together until its leases expire,
	// while an overloaded survivor misses ticks of any job, at any time.
	byTick []int
	// The survivors' runs of ticks from first on, and their start delays.
	runs     int
	p99, max time.Duration
}

// beforeCrash reports whether the window tick (unix seconds) came before
// the crash, when the killed replica's runs are unknown.
func (c *collector) beforeCrash(tick int64) bool { return c.crashMs != 0 && tick*1000 < c.crashMs }

// analyzeCrash measures the crash of col.killed at col.crashMs from the
// records of the survivors (any of the killed replica's are left out). A
// job-tick counts as run if both the scheduler's events and the job's own
// records show a run, as in analyze.
func analyzeCrash(col *collector, jobs, ticks int) crashStats {
	at := time.UnixMilli(col.crashMs)
	c := crashStats{on: true, at: at, offset: at.Sub(time.Unix(col.w0, 0)), first: (col.crashMs + 999) / 1000}
	ev := make([]int, jobs*ticks)
	own := make([]int, jobs*ticks)
	idx := func(r record) (int, bool) {
		if r.Replica == col.killed || r.Tick < col.w0 || r.Tick >= col.w1 || r.Job < 0 || int(r.Job) >= jobs {
			return 0, false
		}
		return int(r.Tick-col.w0)*jobs + int(r.Job), true
	}
	var delays []time.Duration
	for _, r := range col.records() {
		if i, ok := idx(r); ok && r.Kind == "run_started" {
			ev[i]++
			if !col.beforeCrash(r.Tick) {
				delays = append(delays, r.Delay)
			}
		}
	}
	for _, r := range col.jobStarts() {
		if i, ok := idx(r); ok {
			own[i]++
		}
	}
	from := max(c.first, col.w0)
	c.byTick = make([]int, max(col.w1-from, 0))
	shardOf := make([]int, jobs)
	var survivorsRan [engine.Shards]bool // at the last tick before the crash
	for j := range jobs {
		shardOf[j] = engine.ShardOf("j" + strconv.Itoa(j))
		if last := from - 1 - col.w0; last >= 0 && last < int64(ticks) {
			if i := int(last)*jobs + j; min(ev[i], own[i]) > 0 {
				survivorsRan[shardOf[j]] = true
			}
		}
	}
	killedJob := make([]bool, jobs)
	for j := range jobs {
		killedJob[j] = from > col.w0 && !survivorsRan[shardOf[j]]
	}
	missedJob := make([]bool, jobs)
	for i := range ev {
		tick, job := col.w0+int64(i/jobs), i%jobs
		if min(ev[i], own[i]) > 0 || col.beforeCrash(tick) {
			continue
		}
		c.missed++
		c.byTick[tick-from]++
		missedJob[job] = true
		c.lastMiss = max(c.lastMiss, tick)
	}
	c.after = jobs * len(c.byTick)
	for j := range jobs {
		if killedJob[j] {
			c.killedJobs++
		}
		if missedJob[j] {
			c.missedJobs++
			if !killedJob[j] {
				c.othersMissed++
			}
		}
	}
	if c.lastMiss != 0 {
		c.stall = time.Unix(c.lastMiss, 0).Sub(at)
	}
	c.recovered = c.lastMiss < col.w1-1
	slices.Sort(delays)
	c.runs = len(delays)
	c.p99 = stats.Percentile(delays, 0.99)
	if len(delays) > 0 {
		c.max = delays[len(delays)-1]
	}
	return c
}

// ok reports whether the round's crash met issue 30's goal 4: its stall
// ended within ttl (and before the window did), no job that the
// survivors ran before it missed a tick after it, and no tick ran twice.
func (c crashStats) ok(ttl time.Duration, duplicates int) bool {
	return c.stall <= ttl && c.recovered && c.othersMissed == 0 && duplicates == 0
}

// stallStr formats the stall, "≥" when the window ended before it did.
func (c crashStats) stallStr() string {
	s := fmt.Sprintf("%.1f s", c.stall.Seconds())
	if !c.recovered {
		s = "≥ " + s
	}
	return s
}

// writeCrash writes the crash figures (-crash): one line per round, then
// medians over the rounds of each setup.
func writeCrash(w io.Writer, cfg config, results []result, sums []summary) {
	fmt.Fprintf(w, "\ncrash: replica %d SIGKILLed %v after the window's first tick, each round; lease TTL %v (%s)\n",
		crashKilled, cfg.crash, cfg.leaseTTL(), leaseTTLSource(cfg))
	head := "setup\tround\tcrash at\tjob-ticks after\tmissed\tjobs missed\tkilled's jobs\tothers' jobs missed\tstall\tsurvivors' start p99\tmax\ttwice"
	tw := table.New(w)
	fmt.Fprintln(tw, head)
	for _, su := range cfg.setups() {
		for _, r := range results {
			c := r.crash
			if r.setup() != su || !c.on {
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t+%.3f s\t%d\t%d (%s)\t%d (%s)\t%d (%s)\t%d\t%s\t%s\t%s\t%d\n", su, r.round+1, c.offset.Seconds(), c.after,
				c.missed, pct(float64(c.missed)/float64(max(c.after, 1))), c.missedJobs, pct(float64(c.missedJobs)/float64(r.jobs)),
				c.killedJobs, pct(float64(c.killedJobs)/float64(r.jobs)), c.othersMissed, c.stallStr(), msOrDash(c.p99, c.runs), msOrDash(c.max, c.runs), r.duplicates)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "missed by tick, from the first tick at or after the crash (n×k: k ticks in a row with n missed):")
	for _, su := range cfg.setups() {
		for _, r := range results {
			if r.setup() == su && r.crash.on {
				fmt.Fprintf(w, "  %s, round %d: %s\n", su, r.round+1, runLengths(r.crash.byTick))
			}
		}
	}
	fmt.Fprintln(w, "\nmedians over rounds (missed, others' jobs missed, twice: sums; stall: median, and the longest; max: the largest):")
	tw = table.New(w)
	fmt.Fprintln(tw, "setup\trounds\tmissed\tjobs missed\tkilled's jobs\tothers' jobs missed\tstall\tlongest\tsurvivors' start p99\tmax\ttwice")
	for _, s := range sums {
		rs := crashRounds(s.rounds)
		if len(rs) == 0 {
			continue
		}
		med := func(f func(crashStats) float64) float64 {
			return stats.MedianOf(rs, func(r result) float64 { return f(r.crash) })
		}
		missed, others, twice := 0, 0, 0
		for _, r := range rs {
			missed, others, twice = missed+r.crash.missed, others+r.crash.othersMissed, twice+r.duplicates
		}
		longest := slices.MaxFunc(rs, func(a, b result) int { return cmp.Compare(a.crash.stall, b.crash.stall) }).crash
		runs := func(r result) int { return r.crash.runs }
		p99 := medLat(rs, func(r result) time.Duration { return r.crash.p99 }, runs)
		mx := "-" // the largest of the rounds
		if p99.ok() {
			mx = ms(slices.MaxFunc(rs, func(a, b result) int { return cmp.Compare(a.crash.max, b.crash.max) }).crash.max)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%.1f s\t%s\t%s\t%s\t%d\n", s.setup, len(rs), missed,
			pct(med(func(c crashStats) float64 { return float64(c.missedJobs) })/float64(s.jobs)),
			pct(med(func(c crashStats) float64 { return float64(c.killedJobs) })/float64(s.jobs)),
			others, med(func(c crashStats) float64 { return c.stall.Seconds() }), longest.stallStr(), p99, mx, twice)
	}
	tw.Flush()
	fmt.Fprintln(w, `crash at: when the SIGKILL was sent, from the window's first tick; job-ticks after: those of the window's ticks at or
after it (earlier ones may have been the killed replica's, whose records died with it: not counted as missed). missed:
those run by no survivor (by the events or the jobs' own records); jobs missed: jobs with such a tick, of all jobs;
killed's jobs: the jobs of the shards none of whose jobs a survivor ran at the last tick before the crash (the killed
replica's, as far as the survivors' records tell); others' jobs missed: missed jobs not among those (a stall beyond the
killed replica's share).
stall: from the crash to the last tick at which a job was missed ("≥" if that is the window's last tick).
survivors' start p99, max: of their runs of the ticks at or after the crash. twice: job-ticks of the window run twice
by the survivors. With -crash, the other tables count the survivors alone: "ran", the replica shares, calls and
replica CPU leave out the killed replica, and "missed" counts the ticks at or after the crash only.`)
}

// crashRounds returns the rounds of rs that had a crash.
func crashRounds(rs []result) []result {
	var out []result
	for _, r := range rs {
		if r.crash.on {
			out = append(out, r)
		}
	}
	return out
}

// leaseTTLSource tells where the lease TTL of cfg.leaseTTL comes from.
func leaseTTLSource(cfg config) string {
	if cfg.wiring == wiringRedcron {
		return "the shard leases' and the replica anchors', min(max TTL, 10s): internal/fleet's shardTTL"
	}
	return "the jobs' lock TTL: every replica claims every tick"
}

// writeGoal30Crash evaluates issue 30's goal 4, crash half, on every
// setup: a replica's crash stalls at most its own share, for at most the
// lease TTL, and runs nothing twice, in every round.
func writeGoal30Crash(w io.Writer, cfg config, sums []summary) {
	ttl := cfg.leaseTTL()
	for _, s := range sums {
		rs := crashRounds(s.rounds)
		if len(rs) == 0 {
			continue
		}
		all, twice, others := true, 0, 0
		var longest time.Duration
		recovered := true
		for _, r := range rs {
			all = all && r.crash.ok(ttl, r.duplicates)
			twice += r.duplicates
			others += r.crash.othersMissed
			longest = max(longest, r.crash.stall)
			recovered = recovered && r.crash.recovered
		}
		missed := stats.MedianOf(rs, func(r result) float64 { return float64(r.crash.missedJobs) / float64(r.jobs) })
		killed := stats.MedianOf(rs, func(r result) float64 { return float64(r.crash.killedJobs) / float64(r.jobs) })
		stall := stats.MedianOf(rs, func(r result) float64 { return r.crash.stall.Seconds() })
		rec := ""
		if !recovered {
			rec = " (a round's stall lasted to the window's end)"
		}
		fmt.Fprintf(w, " issue 30 goal 4 (crash), %s: a crash stalls at most the killed replica's share, for at most the lease TTL %v, 0 twice:\n", s.setup, ttl)
		fmt.Fprintf(w, "  jobs missed after it %s (the killed replica's %s; others' %d), stall %.1f s (median; longest %.1f s%s), %d twice, %d rounds: %s\n",
			pct(missed), pct(killed), others, stall, longest.Seconds(), rec, twice, len(rs), metStr(all))
	}
}

// runLengths formats ns with each run of k ≥ 2 equal values as "n×k".
func runLengths(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		k := 1
		for i+k < len(ns) && ns[i+k] == ns[i] {
			k++
		}
		if k > 1 {
			parts = append(parts, fmt.Sprintf("%d×%d", ns[i], k))
		} else {
			parts = append(parts, fmt.Sprintf("%d", ns[i]))
		}
		i += k
	}
	return strings.Join(parts, " ")
}
