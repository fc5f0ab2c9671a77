package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// snapshot is every counter at one instant.
type snapshot struct {
	at      time.Time
	nodes   engine.Stats         // summed over replicas and nodes
	cmds    map[string]uint64    // commands the replicas' clients sent, by name
	servers redisnode.Snapshot   // INFO cpu commandstats, summed over servers
	perNode []redisnode.Snapshot // the same, per server
	procCPU time.Duration        // user + system CPU of the replicas' processes
}

// serverSnapshot returns the servers' counters now, in a snapshot whose
// replicas' counters are still to be added (addReplica).
func serverSnapshot(ctx context.Context, admin []*redis.Client) (snapshot, error) {
	s := snapshot{at: time.Now(), cmds: make(map[string]uint64)}
	s.servers = redisnode.Snapshot{Calls: map[string]uint64{}}
	for _, c := range admin {
		snap, err := redisnode.TakeSnapshot(ctx, c)
		if err != nil {
			return snapshot{}, err
		}
		s.perNode = append(s.perNode, snap)
		s.servers = s.servers.Add(snap)
	}
	return s, nil
}

// addReplica adds a replica's counters to s.
func (s *snapshot) addReplica(r replicaSnap) {
	s.nodes.Calls += r.Nodes.Calls
	s.nodes.Pipelines += r.Nodes.Pipelines
	s.nodes.Failed += r.Nodes.Failed
	s.nodes.Skipped += r.Nodes.Skipped
	for k, v := range r.Cmds {
		s.cmds[k] += v
	}
	s.procCPU += r.CPU
}

// processCPU returns the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// result is what one run of J jobs measured over its window.
type result struct {
	jobs, round int
	ahead       time.Duration
	noLedger    bool
	baseline    bool
	ticks       int           // ticks in the window: cfg.ticks(jobs)
	window      time.Duration // wall time between the two snapshots

	runs       int // runs started for window ticks: the samples of p50, p99
	ranPairs   int // (job, tick) pairs with at least one run_started event
	within2s   int // runs started at most 2 s after their tick
	inJobRuns  int // start records of the jobs themselves: the samples of jobP50, jobP99
	duplicates int // (job, tick) pairs run more than once, by the events or by the jobs' own records
	extraRuns  int // runs beyond the first of those
	misses     int // (job, tick) pairs run by no replica, by the events or by the jobs' own records
	// The cross-check of the scheduler's run_started events with the jobs'
	// own start records: pairs the jobs started more than once, and pairs
	// where the two counts differ (each also counted as a duplicate or a
	// miss), with an example.
	jobDuplicates, mismatches int
	mismatchExample           string
	unhandled                 int // (replica, job, tick) triples with no outcome by shutdown
	p50, p99                  time.Duration
	maxDelay                  time.Duration
	// The start delays the jobs saw themselves, as their first action.
	jobP50, jobP99 time.Duration
	// Runs won at the first lock attempt, and the start delays of those
	// and of the runs that needed more attempts.
	firstAttempt           int
	firstP50, firstP99     time.Duration
	retriedP50, retriedP99 time.Duration
	skips                  map[string]int // skipped events of window ticks, by reason, over replicas
	retries                int            // lock_retry events of window ticks
	failedRuns             map[string]int // run_finished of window ticks other than success, by result
	perReplica             []int          // runs by replica
	// For each window tick with runs: its runs by replica and their start
	// delays (the -per-tick lines, and the busiest replica's share).
	perTick []tickStat
	// With -crash: the stall of the killed replica's jobs (crash.go).
	crash crashStats

	// Failed lock acquisitions during the window (mutex observers).
	lockFails     map[string]int // by reason, of attempts stamped with a window tick (lockObserver)
	failsTimedOut int            // of those, with at least one node timing out
	// Misses by what the replicas were told: the tick marked as run on a
	// quorum (marked), held by a value for that very tick owned by a
	// replica that itself was refused (self), held only by other replicas'
	// values (other), neither (none).
	missMarked, missSelf, missOther, missNone int
	// Misses by one account only: a run_started event but no start of the
	// job itself (noStart), or a start of the job without a run_started
	// event (noEvent).
	missNoStart, missNoEvent int
	missExample              string

	nodes    engine.Stats      // delta over the window
	cmds     map[string]uint64 // delta
	server   map[string]uint64 // INFO commandstats delta, summed over servers (our own INFO removed)
	redisCPU float64           // seconds, summed over servers
	procCPU  float64           // seconds

	goroutinesLeft []int // by replica, after its shutdown (replicaOutput)
	shutdownErrs   int   // replicas whose scheduler's Shutdown failed (not finished within 10 s)

	register   time.Duration // registering the jobs, the slowest replica
	heapPerJob float64       // heap in use per registered job, bytes, the largest of the replicas
	builds     []string      // the replicas' executables' commits
}

// jobTicks is the number of job executions the window calls for.
func (r result) jobTicks() float64 { return float64(r.jobs * r.ticks) }

// plainCmds is the number of commands the clients sent other than the
// lock scripts (EVALSHA, and EVAL for a script resent after NOSCRIPT):
// heartbeat SETs.
func (r result) plainCmds() uint64 {
	var n uint64
	for k, v := range r.cmds {
		if !strings.HasPrefix(k, "eval") {
			n += v
		}
	}
	return n
}

// callsPerJobTick is (script calls + plain commands) per job and tick.
func (r result) callsPerJobTick() float64 {
	return float64(r.nodes.Calls+r.plainCmds()) / r.jobTicks()
}

func (r result) brief() string {
	return fmt.Sprintf("runs %d/%d, duplicates %d, misses %d (events vs the jobs' records: %d differ), unhandled %d, start delay p50 %v p99 %v (in the job: %v, %v), calls/job/tick %.1f, skips %v; registration %v, heap %.0f B/job; shutdowns failed %d",
		r.runs, r.jobs*r.ticks, r.duplicates, r.misses, r.mismatches, r.unhandled, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond),
		r.jobP50.Round(time.Microsecond), r.jobP99.Round(time.Microsecond),
		r.callsPerJobTick(), r.skips, r.register.Round(time.Millisecond), r.heapPerJob, r.shutdownErrs)
}

// tickStat is the start delays of one tick's runs, over replicas.
type tickStat struct {
	tick          int64 // unix seconds
	byReplica     []int // runs, by replica
	replicaP99    []time.Duration
	p50, p99, max time.Duration
}

// share returns the share of t's runs started by the replica that started
// most of them.
func (t tickStat) share() float64 {
	total := 0
	for _, n := range t.byReplica {
		total += n
	}
	return float64(slices.Max(t.byReplica)) / float64(total)
}

func (t tickStat) String() string {
	var rs []string
	for i, n := range t.byReplica {
		rs = append(rs, fmt.Sprintf("%d (p99 %v)", n, t.replicaP99[i].Round(time.Microsecond)))
	}
	return fmt.Sprintf("tick %s: start delay p50 %v p99 %v max %v; runs by replica %s",
		time.Unix(t.tick, 0).UTC().Format("15:04:05"),
		t.p50.Round(time.Microsecond), t.p99.Round(time.Microsecond), t.max.Round(time.Microsecond), strings.Join(rs, ", "))
}

// runOnce runs J jobs on the replicas, each in a process of its own
// (replicaMain) started from exe: once every replica has registered its
// jobs, they run from the same instant, for the warm-up and the window
// (or up to the rush's tick and the idle time after it); they stop once
// they have handled the window's ticks. serversUp is when the servers
// were started, after which untrusted nodes wait the max TTL before they
// vote.
func runOnce(ctx context.Context, cfg config, exe string, servers []*redisproc.Server, admin []*redis.Client, serversUp time.Time,
	su setup, round int, profile string, progress io.Writer) (result, error) {
	jobs := su.jobs
	ticks := cfg.ticks(jobs)
	prefix := fmt.Sprintf("sb-r%d-j%d-a%d", round, jobs, su.ahead.Milliseconds())
	if su.noLedger {
		prefix += "-nl"
	}
	if su.baseline {
		prefix += "-b"
	}
	spec := replicaSpec{Prefix: prefix, Jobs: jobs, Spec: "* * * * * *", Ahead: su.ahead, NoLedger: su.noLedger,
		Wiring: cfg.wiring, LockTTL: cfg.lockTTL, MaxTTL: cfg.maxTTL, JobSleep: cfg.jobSleep}
	votes := cfg.votesFrom(serversUp)
	// The rush is due by the wall clock, on a daily spec for an instant
	// -rush-lead ahead (and once every node votes). scheduler.WithClock
	// could move the replicas' clock to a midnight instead, but the
	// Redlock checks each claimed occurrence against the real clock (no
	// more than the max TTL and 2 s ahead: mutex's checkOccurrence), and
	// an untrusted node vouches for an occurrence by its uptime in real
	// time: a shifted clock's ticks would be refused.
	var tick time.Time // the rush's
	if cfg.rush {
		tick = later(time.Now().Truncate(time.Second).Add(cfg.rushLead), votes)
		spec.Spec = dailySpec(tick)
	}
	for _, s := range servers {
		spec.Addrs = append(spec.Addrs, s.Addr())
	}
	procs, err := startReplicas(ctx, exe, cfg.replicas, spec, profile, progress)
	if err != nil {
		return result{}, err
	}
	readies, err := procs.ready()
	if err != nil {
		return result{}, err
	}
	// Started together on the next whole second; measured once every node
	// votes.
	g := replicaGo{Start: time.Now().Truncate(time.Second).Add(time.Second)}
	if cfg.rush {
		if lead := tick.Sub(g.Start); lead < su.ahead+time.Second {
			return result{}, errors.Join(fmt.Errorf("the replicas were ready %v before the rush's tick at %s, less than the lock-ahead and 1 s: raise -rush-lead (%v)",
				lead, tick.UTC().Format(time.TimeOnly), cfg.rushLead), procs.kill())
		}
		g.W0, g.W1 = tick.Unix(), tick.Unix()+1
		g.SnapA, g.SnapB = later(tick.Add(-su.ahead-time.Second/2), g.Start), tick.Add(cfg.idle)
		g.Deadline = g.SnapB.Add(cfg.settle)
	} else {
		w0 := later(g.Start.Add(cfg.warmup), votes)
		w1 := w0.Add(time.Duration(ticks) * time.Second)
		// Snapshots midway between a tick and the lock-ahead of the next,
		// before the window's first tick and before the tick after its
		// last, so that the traffic between them is that of the window's
		// ticks (for ticks handled within that gap), heartbeats included.
		gap := (time.Second + su.ahead) / 2
		g.W0, g.W1 = w0.Unix(), w1.Unix()
		g.SnapA, g.SnapB, g.Deadline = w0.Add(-gap), w1.Add(-gap), w1.Add(cfg.settle)
	}
	if err := procs.start(g); err != nil {
		return result{}, err
	}
	fmt.Fprintf(progress, "  ready %v before the start; window %s-%s\n", time.Until(g.Start).Round(time.Millisecond),
		time.Unix(g.W0, 0).UTC().Format(time.TimeOnly), time.Unix(g.W1, 0).UTC().Format(time.TimeOnly))

	var a, b snapshot
	var crashed time.Time // when replica crashKilled was killed (-crash)
	if sleepUntil(ctx, g.SnapA) {
		a, err = serverSnapshot(ctx, admin)
	}
	if cfg.crash > 0 && err == nil && sleepUntil(ctx, time.Unix(g.W0, 0).Add(cfg.crash)) {
		crashed, err = procs.killOne(crashKilled)
		fmt.Fprintf(progress, "  replica %d killed at %s (+%v in the window)\n", crashKilled,
			crashed.UTC().Format("15:04:05.000"), crashed.Sub(time.Unix(g.W0, 0)).Round(time.Millisecond))
	}
	if err == nil && sleepUntil(ctx, g.SnapB) {
		b, err = serverSnapshot(ctx, admin)
	}
	if err != nil {
		procs.kill()
		return result{}, err
	}
	outs, werr := procs.wait()
	if cerr := ctx.Err(); cerr != nil {
		return result{}, cerr // the replicas were killed
	}
	if werr != nil {
		return result{}, werr
	}

	var recs, inJobs []record
	var fails []lockFail
	var left []int
	shutdownErrs := 0
	for _, o := range outs {
		recs, inJobs, fails = append(recs, o.Recs...), append(inJobs, o.InJobs...), append(fails, o.Fails...)
		left = append(left, o.GoroutinesLeft)
		if o.ShutdownErr != "" {
			shutdownErrs++
		}
		a.addReplica(o.A)
		b.addReplica(o.B)
	}
	col := &collector{w0: g.W0, w1: g.W1}
	if !crashed.IsZero() {
		col.crashMs, col.killed = crashed.UnixMilli(), crashKilled
	}
	col.recs.set(recs)
	col.inJobs.set(inJobs)
	col.fails.set(fails)
	res := analyze(col, jobs, cfg.replicas, ticks)
	res.round, res.ahead, res.noLedger, res.baseline, res.goroutinesLeft = round, su.ahead, su.noLedger, su.baseline, left
	res.shutdownErrs = shutdownErrs
	for _, r := range readies {
		res.register = max(res.register, r.Register)
		if r.HeapAfter > r.HeapBefore {
			res.heapPerJob = max(res.heapPerJob, float64(r.HeapAfter-r.HeapBefore)/float64(jobs))
		}
		res.builds = append(res.builds, r.Build)
	}
	res.window = b.at.Sub(a.at)
	res.nodes = engine.Stats{Calls: b.nodes.Calls - a.nodes.Calls, Pipelines: b.nodes.Pipelines - a.nodes.Pipelines,
		Failed: b.nodes.Failed - a.nodes.Failed, Skipped: b.nodes.Skipped - a.nodes.Skipped}
	res.cmds = make(map[string]uint64)
	for k, v := range b.cmds {
		if d := v - a.cmds[k]; d > 0 {
			res.cmds[k] = d
		}
	}
	d := b.servers.Sub(a.servers)
	res.server = d.Calls
	// Our own INFO of snapshot a is counted in b's figures: one per server.
	if n := uint64(len(admin)); res.server["info"] >= n {
		res.server["info"] -= n
	}
	res.redisCPU = d.CPU
	res.procCPU = (b.procCPU - a.procCPU).Seconds()
	return res, nil
}

// analyze tallies the events of the window's ticks.
func analyze(col *collector, jobs, replicas, ticks int) result {
	res := result{jobs: jobs, ticks: ticks, skips: map[string]int{}, failedRuns: map[string]int{}, perReplica: make([]int, replicas)}
	// Each pair is to have an outcome from every replica, but one killed
	// on purpose, whose runs before its crash are unknown: a pair of a tick
	// before the crash that no other replica ran is not a miss.
	expect := replicas
	if col.crashMs != 0 {
		expect--
		res.crash = analyzeCrash(col, jobs, ticks)
	}
	runs := make([]uint8, jobs*ticks)
	outcomes := make([]uint8, jobs*ticks) // run_started + skipped, over replicas
	var delays, first, retried []time.Duration
	alreadyRan := make([]bool, jobs*ticks)
	tickDelays := make([][]time.Duration, ticks*replicas) // start delays by tick and replica
	for _, r := range col.records() {
		if r.Tick < col.w0 || r.Tick >= col.w1 || int(r.Job) >= jobs {
			continue
		}
		i := int(r.Tick-col.w0)*jobs + int(r.Job)
		switch r.Kind {
		case "run_started":
			if runs[i] == 0 {
				res.ranPairs++
			}
			if r.Delay <= 2*time.Second {
				res.within2s++
			}
			runs[i]++
			outcomes[i]++
			res.runs++
			res.perReplica[r.Replica]++
			delays = append(delays, r.Delay)
			k := int(r.Tick-col.w0)*replicas + int(r.Replica)
			tickDelays[k] = append(tickDelays[k], r.Delay)
			if r.Attempts <= 1 {
				res.firstAttempt++
				first = append(first, r.Delay)
			} else {
				retried = append(retried, r.Delay)
			}
		case "skipped":
			outcomes[i]++
			if r.Skip == "already_run" {
				alreadyRan[i] = true
			}
			res.skips[r.Skip]++
		case "lock_retry":
			res.retries++
		case "run_finished":
			if r.Result != "success" {
				res.failedRuns[r.Result]++
			}
		}
	}
	for t := range ticks {
		ts := tickStat{tick: col.w0 + int64(t)}
		var d []time.Duration
		for _, rd := range tickDelays[t*replicas : (t+1)*replicas] {
			slices.Sort(rd)
			ts.byReplica = append(ts.byReplica, len(rd))
			ts.replicaP99 = append(ts.replicaP99, stats.Percentile(rd, 0.99))
			d = append(d, rd...)
		}
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		ts.p50, ts.p99, ts.max = stats.Percentile(d, 0.5), stats.Percentile(d, 0.99), d[len(d)-1]
		res.perTick = append(res.perTick, ts)
	}
	// What the lock observers saw, for the window and for the misses.
	res.lockFails = map[string]int{}
	heldBy := map[int]map[int8]bool{} // (tick, job) → holder owners seen
	selfHeld := map[int]bool{}        // (tick, job) held by the observer's own value
	for _, f := range col.lockFails() {
		if f.Tick >= col.w0 && f.Tick < col.w1 {
			res.lockFails[f.Reason]++
			if f.Timeouts > 0 {
				res.failsTimedOut++
			}
		}
		if f.Reason != "held" || f.HolderTick < col.w0 || f.HolderTick >= col.w1 || int(f.Job) >= jobs {
			continue
		}
		i := int(f.HolderTick-col.w0)*jobs + int(f.Job)
		if heldBy[i] == nil {
			heldBy[i] = map[int8]bool{}
		}
		heldBy[i][f.HolderOwner] = true
		if f.HolderOwner == f.Replica {
			selfHeld[i] = true
		}
	}
	// The jobs' own start records, to check the events against.
	started := make([]int, jobs*ticks)
	var inJob []time.Duration
	for _, r := range col.jobStarts() {
		if r.Tick >= col.w0 && r.Tick < col.w1 && int(r.Job) < jobs {
			started[int(r.Tick-col.w0)*jobs+int(r.Job)]++
			inJob = append(inJob, r.Delay)
		}
	}
	res.inJobRuns = len(inJob)
	for i, n := range runs {
		ev, own := int(n), started[i]
		if own > 1 {
			res.jobDuplicates++
		}
		if ev != own {
			res.mismatches++
			if res.mismatchExample == "" {
				res.mismatchExample = fmt.Sprintf("j%d at %s: %d run_started events, %d starts recorded by the job",
					i%jobs, time.Unix(col.w0+int64(i/jobs), 0).UTC().Format("15:04:05"), ev, own)
			}
		}
		// A pair counts as missed if either account saw no run, and as
		// duplicated if either saw more than one.
		if min(ev, own) == 0 && !col.beforeCrash(col.w0+int64(i/jobs)) {
			res.misses++
			switch {
			case ev > 0:
				res.missNoStart++
			case own > 0:
				res.missNoEvent++
			case alreadyRan[i]:
				res.missMarked++
			case selfHeld[i]:
				res.missSelf++
			case len(heldBy[i]) > 0:
				res.missOther++
			default:
				res.missNone++
			}
			if res.missExample == "" && ev == 0 {
				res.missExample = describeMiss(col, jobs, i)
			}
		}
		if hi := max(ev, own); hi > 1 {
			res.duplicates++
			res.extraRuns += hi - 1
		}
		if int(outcomes[i]) < expect {
			res.unhandled += expect - int(outcomes[i])
		}
	}
	slices.Sort(inJob)
	res.jobP50, res.jobP99 = stats.Percentile(inJob, 0.5), stats.Percentile(inJob, 0.99)
	slices.Sort(delays)
	slices.Sort(first)
	slices.Sort(retried)
	res.p50, res.p99 = stats.Percentile(delays, 0.5), stats.Percentile(delays, 0.99)
	res.firstP50, res.firstP99 = stats.Percentile(first, 0.5), stats.Percentile(first, 0.99)
	res.retriedP50, res.retriedP99 = stats.Percentile(retried, 0.5), stats.Percentile(retried, 0.99)
	if len(delays) > 0 {
		res.maxDelay = delays[len(delays)-1]
	}
	return res
}

// votesFrom returns the first instant every untrusted node votes for a
// tick at, on servers started by serversUp (zero with trusted nodes): a
// node votes once up for the max TTL, and for a tick only if it was up
// the max TTL and 3 s (the clock-skew margin and a second for the
// resolution of Redis's uptime) before it; and a second more, for the
// uptime's estimate (mutex/servers.go).
func (c config) votesFrom(serversUp time.Time) time.Time {
	if c.wiring != wiringRedcron {
		return time.Time{}
	}
	return ceilSecond(serversUp.Add(c.effectiveMaxTTL() + 4*time.Second))
}

// dailySpec returns the six-field cron spec due every day at t's second,
// in UTC (the scheduler's default location).
func dailySpec(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%d %d %d * * *", t.Second(), t.Minute(), t.Hour())
}

// ceilSecond returns t rounded up to a whole second.
func ceilSecond(t time.Time) time.Time {
	if u := t.Truncate(time.Second); !u.Equal(t) {
		return u.Add(time.Second)
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

// sleepUntil sleeps until t or until ctx is done; it reports whether it
// slept until t.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// describeMiss tells what every replica reported about the missed pair i:
// the scheduler's events for the tick, and the failed lock attempts of the
// job for the tick, each with its start relative to the tick.
func describeMiss(col *collector, jobs, i int) string {
	tick, job := col.w0+int64(i/jobs), int32(i%jobs)
	var parts []string
	for _, r := range col.records() {
		if r.Job == job && r.Tick == tick && (r.Kind == "skipped" || r.Kind == "lock_retry") {
			parts = append(parts, fmt.Sprintf("replica-%d %s %s (attempt %d)", r.Replica, r.Kind, r.Skip, r.Attempts))
		}
	}
	for _, f := range col.lockFails() {
		if f.Job == job && f.Tick == tick {
			s := fmt.Sprintf("replica-%d lock %s at %+dms, %d timeouts", f.Replica, f.Reason, f.At-tick*1000, f.Timeouts)
			if f.Reason == "held" {
				s += fmt.Sprintf(", holder replica-%d for tick %+ds", f.HolderOwner, f.HolderTick-tick)
			}
			parts = append(parts, s)
		}
	}
	return fmt.Sprintf("j%d at %s: %s", job, time.Unix(tick, 0).UTC().Format("15:04:05"), strings.Join(parts, "; "))
}

// quiesce waits, up to a limit, until the servers are idle (below 5% of a
// core over a quarter of a second), so that a run does not pay for the
// one before, and returns how long it waited.
func quiesce(ctx context.Context, admin []*redis.Client) time.Duration {
	const (
		step  = 250 * time.Millisecond
		idle  = step / 20
		limit = 30 * time.Second
	)
	start := time.Now()
	redisCPU := func() float64 {
		var sum float64
		for _, c := range admin {
			if s, err := redisnode.TakeSnapshot(ctx, c); err == nil {
				sum += s.CPU
			}
		}
		return sum
	}
	for time.Since(start) < limit && ctx.Err() == nil {
		r0 := redisCPU()
		time.Sleep(step)
		if time.Duration((redisCPU()-r0)*float64(time.Second)) < idle {
			break
		}
	}
	return time.Since(start)
}
