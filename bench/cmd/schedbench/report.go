package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/bench/internal/table"
	"github.com/redcron/redcron/internal/engine"
)

// Goals at goalJobs jobs.
const (
	goalJobs      = 1000
	goalP99Ratio  = 3.0                    // p99 start delay ÷ that of 1 job
	goalP99       = 250 * time.Millisecond // p99 start delay
	goalCallsPerN = 3                      // calls per job and tick ≤ (replicas + goalCallsPerN) × nodes
)

// summary is the medians over rounds of one setup.
type summary struct {
	setup
	rounds                      []result
	ticks                       int // per round
	runsPerTick                 float64
	duplicates, misses          int // summed over rounds
	unhandled                   int
	p50, p99                    lat
	maxDelay                    lat     // over all rounds; n is every run
	calls, scripts, plain, pipe float64 // per job and tick
	server                      float64 // server-side command executions per job and tick
	infoVsStats                 float64 // INFO evalsha+eval ÷ Node.Stats calls
	redisCores, procCores       float64 // CPU seconds per second
	redisUs, procUs             float64 // CPU µs per job and tick
	retries                     int     // summed over rounds
	firstShare                  float64 // runs won at the first attempt ÷ runs
	firstP50, firstP99          lat
	jobP50, jobP99              lat // as the jobs saw them
	retriedP50, retriedP99      lat
	nodes                       engine.Stats // summed over rounds
	lockFails                   map[string]int
	failsTimedOut               int
	missMarked, missSelf        int
	missOther                   int
	missNone                    int
	missNoStart, missNoEvent    int
	jobDuplicates, mismatches   int // summed over rounds
	mismatchExample             string
	missExample                 string
	skips, failedRuns           map[string]int
	perReplica                  []int
	tickShares                  []float64 // over rounds' ticks (see tickStat.share)
	shutdownErrs                int       // replicas whose Shutdown failed, summed over rounds
}

func summarize(cfg config, results []result) []summary {
	var sums []summary
	for _, su := range cfg.setups() {
		var rs []result
		for _, r := range results {
			if r.setup() == su {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 || slices.ContainsFunc(sums, func(s summary) bool { return s.setup == su }) {
			continue
		}
		s := summary{setup: su, rounds: rs, skips: map[string]int{}, failedRuns: map[string]int{}, perReplica: make([]int, cfg.replicas)}
		med := func(f func(result) float64) float64 { return stats.MedianOf(rs, f) }
		s.runsPerTick = med(func(r result) float64 { return float64(r.runs) / float64(r.ticks) })
		s.ticks = rs[0].ticks
		runs := func(r result) int { return r.runs }
		s.p50 = medLat(rs, func(r result) time.Duration { return r.p50 }, runs)
		s.p99 = medLat(rs, func(r result) time.Duration { return r.p99 }, runs)
		s.calls = med(result.callsPerJobTick)
		s.scripts = med(func(r result) float64 { return float64(r.nodes.Calls) / r.jobTicks() })
		s.plain = med(func(r result) float64 { return float64(r.plainCmds()) / r.jobTicks() })
		s.pipe = med(func(r result) float64 { return float64(r.nodes.Pipelines) / r.jobTicks() })
		s.server = med(func(r result) float64 {
			var n uint64
			for _, v := range r.server {
				n += v
			}
			return float64(n) / r.jobTicks()
		})
		s.infoVsStats = med(func(r result) float64 {
			return float64(r.server["evalsha"]+r.server["eval"]) / float64(max(r.nodes.Calls, 1))
		})
		s.redisCores = med(func(r result) float64 { return r.redisCPU / r.window.Seconds() })
		s.procCores = med(func(r result) float64 { return r.procCPU / r.window.Seconds() })
		s.redisUs = med(func(r result) float64 { return 1e6 * r.redisCPU / r.jobTicks() })
		s.procUs = med(func(r result) float64 { return 1e6 * r.procCPU / r.jobTicks() })
		s.firstShare = med(func(r result) float64 { return float64(r.firstAttempt) / float64(max(r.runs, 1)) })
		first := func(r result) int { return r.firstAttempt }
		s.firstP50 = medLat(rs, func(r result) time.Duration { return r.firstP50 }, first)
		s.firstP99 = medLat(rs, func(r result) time.Duration { return r.firstP99 }, first)
		inJob := func(r result) int { return r.inJobRuns }
		s.jobP50 = medLat(rs, func(r result) time.Duration { return r.jobP50 }, inJob)
		s.jobP99 = medLat(rs, func(r result) time.Duration { return r.jobP99 }, inJob)
		retried := func(r result) int { return r.runs - r.firstAttempt }
		s.retriedP50 = medLat(rs, func(r result) time.Duration { return r.retriedP50 }, retried)
		s.retriedP99 = medLat(rs, func(r result) time.Duration { return r.retriedP99 }, retried)
		s.lockFails = map[string]int{}
		for _, r := range rs {
			for k, v := range r.lockFails {
				s.lockFails[k] += v
			}
			s.failsTimedOut += r.failsTimedOut
			s.missMarked += r.missMarked
			s.missSelf += r.missSelf
			s.missOther += r.missOther
			s.missNone += r.missNone
			s.missNoStart += r.missNoStart
			s.missNoEvent += r.missNoEvent
			if s.missExample == "" {
				s.missExample = r.missExample
			}
			s.jobDuplicates += r.jobDuplicates
			s.mismatches += r.mismatches
			if s.mismatchExample == "" {
				s.mismatchExample = r.mismatchExample
			}
			s.nodes.Calls += r.nodes.Calls
			s.nodes.Pipelines += r.nodes.Pipelines
			s.nodes.Failed += r.nodes.Failed
			s.nodes.Skipped += r.nodes.Skipped
			s.duplicates += r.duplicates
			s.misses += r.misses
			s.unhandled += r.unhandled
			s.retries += r.retries
			s.shutdownErrs += r.shutdownErrs
			if r.runs > 0 {
				s.maxDelay = lat{d: max(s.maxDelay.d, r.maxDelay), n: s.maxDelay.n + r.runs, rounds: s.maxDelay.rounds + 1, of: len(rs)}
			}
			for k, v := range r.skips {
				s.skips[k] += v
			}
			for k, v := range r.failedRuns {
				s.failedRuns[k] += v
			}
			for i, n := range r.perReplica {
				s.perReplica[i] += n
			}
			for _, t := range r.perTick {
				s.tickShares = append(s.tickShares, t.share())
			}
		}
		sums = append(sums, s)
	}
	return sums
}

// lat is a start-delay figure of a setup: the median, over the rounds that
// had samples for it, of each round's percentile. A round without samples
// has no percentile (stats.Percentile would give 0) and is left out; with
// none in any round, the figure has no data (n = 0) and reads "-".
type lat struct {
	d      time.Duration
	n      int // samples a round it rests on: the fewest of the rounds that had any
	rounds int // rounds that had samples
	of     int // rounds
}

// medLat returns the median over rs of d, leaving out the rounds where n,
// the number of samples d rests on, is 0.
func medLat(rs []result, d func(result) time.Duration, n func(result) int) lat {
	l := lat{of: len(rs)}
	var ds []time.Duration
	for _, r := range rs {
		k := n(r)
		if k == 0 {
			continue
		}
		if l.rounds == 0 || k < l.n {
			l.n = k
		}
		l.rounds++
		ds = append(ds, d(r))
	}
	l.d = stats.MedianDuration(ds)
	return l
}

// ok reports whether l has data.
func (l lat) ok() bool { return l.n > 0 }

// String returns l in milliseconds, or "-" without data.
func (l lat) String() string {
	if !l.ok() {
		return "-"
	}
	return ms(l.d)
}

// samples tells how many samples a round l rests on, and in how many of
// the rounds when some had none.
func (l lat) samples() string {
	if l.rounds > 0 && l.rounds < l.of {
		return fmt.Sprintf("%d (in %d of %d rounds)", l.n, l.rounds, l.of)
	}
	return fmt.Sprintf("%d", l.n)
}

func writeReport(w io.Writer, m machine.Machine, cfg config, results []result) {
	m.WriteHeader(w)
	writeRun(w, cfg)
	sums := summarize(cfg, results)
	writeFigures(w, cfg, results, sums)
	if cfg.crash > 0 {
		writeCrash(w, cfg, results, sums)
	}
	fmt.Fprintln(w, "\nin detail:")

	tw := table.New(w)
	fmt.Fprintln(tw, "jobs\tahead\tledger\treplicas\tticks\truns/tick\tduplicates\tmisses\tunhandled\tsamples\tstart p50\tstart p99\tmax\tin-job p99\tcalls/job/tick\tscripts\tplain\tpipelines\tserver cmds\tredis CPU\treplicas CPU\tredis µs/job/tick\treplicas µs/job/tick")
	for _, s := range sums {
		fmt.Fprintf(tw, "%d\t%v\t%s\t%s\t%d\t%.1f\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.3f\t%.2f\t%.1f\t%.2f\t%.2f\t%.1f\t%.1f\n",
			s.jobs, s.ahead, onOff(!s.noLedger), buildName(s.baseline), s.ticks, s.runsPerTick, s.duplicates, s.misses, s.unhandled, s.p99.samples(), s.p50, s.p99, s.maxDelay, s.jobP99,
			s.calls, s.scripts, s.plain, s.pipe, s.server, s.redisCores, s.procCores, s.redisUs, s.procUs)
	}
	tw.Flush()
	fmt.Fprintln(w, `
replicas: this build's, or the -baseline executable's. ticks: ticks measured per round, max(-measure, ceil(-min-samples / J)). runs/tick: runs started per tick of the window
(must equal jobs). samples: runs per round that the start percentiles rest on (the fewest of the rounds); a round
without runs is left out of the latency medians, and "-" means no round had any. duplicates: (job, tick) pairs run more
than once; misses: pairs run by no replica; both by the scheduler's run_started events or by the jobs' own start records
(checked against each other, see "cross-check" below); unhandled: (replica, job, tick) with no outcome (run or skip) reported by shutdown.
start p50/p99: EventRunStarted.StartDelay (run start − tick); max over all rounds. in-job p99: the start delay
the jobs measured themselves, as their first action (the run's goroutine scheduled too).
calls/job/tick = (scripts + plain) / (jobs × ticks): scripts = lock script calls the replicas' engine.Nodes sent
(Stats().Calls, all nodes; a script resent with EVAL after NOSCRIPT counts again); plain = other commands their
clients sent (heartbeat SETs; counted by a go-redis hook, which also tells the scripts apart by their arguments). pipelines = round trips that carried the scripts (Stats().Pipelines). server cmds = every command
the servers executed, including those run inside the scripts (INFO commandstats). CPU: seconds per second of
window (redis: used_cpu_user+sys of all servers; replicas: getrusage of each replica's process, summed).`)

	fmt.Fprintln(w, "\noutcomes over all rounds (events of window ticks, all replicas):")
	for _, s := range sums {
		var parts []string
		for _, k := range sortedKeys(s.skips) {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.skips[k]))
		}
		for _, k := range sortedKeys(s.failedRuns) {
			parts = append(parts, fmt.Sprintf("run %s %d", k, s.failedRuns[k]))
		}
		share := make([]string, len(s.perReplica))
		for i, n := range s.perReplica {
			share[i] = fmt.Sprintf("%d", n)
		}
		fmt.Fprintf(w, "  %s: skipped: %s; lock retries %d; runs by replica %s\n",
			s.setup, strings.Join(parts, ", "), s.retries, strings.Join(share, "/"))
		if s.shutdownErrs > 0 {
			fmt.Fprintf(w, "             %d replica shutdowns did not finish within 10 s (runs or lock attempts still going)\n", s.shutdownErrs)
		}
		if len(s.tickShares) > 0 {
			fmt.Fprintf(w, "             the replica that started most of a tick's runs started %.0f%% of them (median over all rounds' ticks; %.0f-%.0f%%)\n",
				100*stats.Median(s.tickShares), 100*slices.Min(s.tickShares), 100*slices.Max(s.tickShares))
		}
		fmt.Fprintf(w, "             runs won at the first attempt %.1f%% (start p50 %s, p99 %s; %s runs a round); after retries: p50 %s, p99 %s (%s runs a round)\n",
			100*s.firstShare, s.firstP50, s.firstP99, s.firstP99.samples(), s.retriedP50, s.retriedP99, s.retriedP99.samples())
		fmt.Fprintf(w, "             start delay as the jobs saw it (their first action): p50 %s, p99 %s (%s runs a round)\n", s.jobP50, s.jobP99, s.jobP99.samples())
		var lf []string
		for _, k := range sortedKeys(s.lockFails) {
			lf = append(lf, fmt.Sprintf("%s %d", k, s.lockFails[k]))
		}
		fmt.Fprintf(w, "             failed lock acquisitions in the window: %s; %d of them with a node timing out\n", strings.Join(lf, ", "), s.failsTimedOut)
		fmt.Fprintf(w, "             cross-check with the jobs' own start records: %d pairs started more than once by the jobs, %d pairs where\n", s.jobDuplicates, s.mismatches)
		fmt.Fprintf(w, "             the jobs' starts and the run_started events differ in number")
		if s.mismatchExample != "" {
			fmt.Fprintf(w, "; e.g. %s", s.mismatchExample)
		}
		fmt.Fprintln(w)
		if s.misses > 0 {
			fmt.Fprintf(w, "             misses: %d refused as already run (a quorum has the tick's mark, yet no run started), %d refused as held by\n", s.missMarked, s.missSelf)
			fmt.Fprintf(w, "             the refused replica's own earlier attempt for the tick, %d held by other replicas only, %d other;\n", s.missOther, s.missNone)
			fmt.Fprintf(w, "             %d with a run_started event but no start of the job, %d started by the job without a run_started event\n", s.missNoStart, s.missNoEvent)
			if s.missExample != "" {
				fmt.Fprintf(w, "             e.g. %s\n", s.missExample)
			}
		}
		fmt.Fprintf(w, "             nodes: %d script calls sent, %d failed at once (back-off or context done in the queue), %d of %d pipelines failed; INFO evalsha+eval ÷ Node.Stats calls %.3f\n",
			s.nodes.Calls, s.nodes.Skipped, s.nodes.Failed, s.nodes.Pipelines, s.infoVsStats)
	}

	fmt.Fprintln(w, "\ncommands per job and tick, median over rounds (client: sent by the replicas' clients; server: INFO commandstats, incl. inside scripts):")
	for _, s := range sums {
		fmt.Fprintf(w, "  %s: client %s\n", s.setup, perJobTick(s.rounds, func(r result) map[string]uint64 { return r.cmds }))
		fmt.Fprintf(w, "  %5s       server %s\n", "", perJobTick(s.rounds, func(r result) map[string]uint64 { return r.server }))
	}

	writeLedger(w, sums)
	writeBaseline(w, sums)

	fmt.Fprintln(w, "\ngoals:")
	if cfg.crash > 0 {
		fmt.Fprintln(w, " (the others are not evaluated with -crash: a replica is killed in every round)")
		writeGoal30Crash(w, cfg, sums)
		return
	}
	if !cfg.rush {
		for _, ahead := range cfg.aheads {
			for _, on := range cfg.ledgerModes() {
				writeGoals(w, cfg, sums, ahead, !on)
			}
		}
	}
	writeGoals30(w, cfg, sums)
}

// writeRun describes the run: the replicas, how they are built, the jobs
// and the windows.
func writeRun(w io.Writer, cfg config) {
	if cfg.shape != "" {
		fmt.Fprintf(w, "shape:   %s\n", cfg.shape)
	}
	jobs := "trivial"
	if cfg.jobSleep > 0 {
		jobs = fmt.Sprintf("each sleeps %v", cfg.jobSleep)
	}
	lockTTL := "30s (default)"
	if cfg.lockTTL > 0 {
		lockTTL = cfg.lockTTL.String()
	}
	maxTTL := cfg.effectiveMaxTTL().String()
	if cfg.maxTTL == 0 {
		maxTTL += " (default)"
	}
	fmt.Fprintf(w, "run:     %d replicas (a process each) × %d redis-servers (no persistence); ", cfg.replicas, cfg.nodes)
	if cfg.wiring == wiringRedcron {
		fmt.Fprintf(w, "each replica redcron.NewWithClients (WithSeconds, untrusted nodes, every other option at its default);\n")
	} else {
		fmt.Fprintf(w, "each replica scheduler.New over mutex.New (WithTrustedNodes) and a heartbeat;\n")
	}
	fmt.Fprintf(w, "         lock TTL %s, max TTL %s; jobs %s; the replicas register their jobs, then start together\n", lockTTL, maxTTL, jobs)
	if cfg.rush {
		fmt.Fprintf(w, "         rush: all jobs on one daily spec \"S M H * * *\" (UTC), due at one instant at least %v after the replicas were started\n", cfg.rushLead)
		fmt.Fprintf(w, "         (and once every node votes); measured from before the tick to %v after it; %d rounds, interleaved\n\n", cfg.idle, cfg.rounds)
		return
	}
	fmt.Fprintf(w, "         jobs due every second (\"* * * * * *\"); per number of jobs J and lock-ahead: %d rounds of %v warm-up (longer until every node votes)\n",
		cfg.rounds, cfg.warmup)
	fmt.Fprintf(w, "         + max(%d, ceil(%d / J)) measured ticks (at least %d runs a round), interleaved; medians over rounds (sums for counts)\n\n",
		int(cfg.measure/time.Second), cfg.minSamples, cfg.minSamples)
}

// buildName names the replicas' executable: this build's or the
// baseline's.
func buildName(baseline bool) string {
	if baseline {
		return "baseline"
	}
	return "this"
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// writeLedger compares each setup run with the lock ledger on with the
// same setup run with it off, if it was (writePaired).
func writeLedger(w io.Writer, sums []summary) {
	writePaired(w, sums, "ledger on vs off", "on", "off", func(su setup) (setup, bool) {
		off := su
		off.noLedger = true
		return off, !su.noLedger
	})
}

// writeBaseline compares each setup run with this build's replicas with
// the same setup run with the baseline's (-baseline), if it was
// (writePaired).
func writeBaseline(w io.Writer, sums []summary) {
	writePaired(w, sums, "this build vs the baseline", "this", "base", func(su setup) (setup, bool) {
		b := su
		b.baseline = true
		return b, !su.baseline
	})
}

// writePaired compares each setup a with its twin b (twin returns it and
// whether a is a setup to compare), if both were run: medians of each
// side over the rounds, and the median over rounds of the per-round
// ratios a ÷ b (round r of both ran one after the other), with their
// extremes, and of the per-round differences of the CPU and the servers'
// commands per job and tick. title heads the part; an and bn name the
// sides.
func writePaired(w io.Writer, sums []summary, title, an, bn string, twin func(setup) (setup, bool)) {
	header := false
	for _, on := range sums {
		other, ok := twin(on.setup)
		if !ok {
			continue
		}
		i := slices.IndexFunc(sums, func(s summary) bool { return s.setup == other })
		if i < 0 {
			continue
		}
		off := sums[i]
		if !header {
			fmt.Fprintf(w, "\n%s (medians over rounds; %s ÷ %s: median of the per-round ratios, min-max; %s − %s: median of the per-round differences):\n",
				title, an, bn, an, bn)
			header = true
		}
		// paired returns f of the rounds of on and off with the same round
		// number.
		paired := func(f func(result) float64) (ons, offs []float64) {
			for _, a := range on.rounds {
				for _, b := range off.rounds {
					if a.round == b.round {
						ons, offs = append(ons, f(a)), append(offs, f(b))
					}
				}
			}
			return ons, offs
		}
		line := func(name, unit string, f func(result) float64, diff bool) {
			ons, offs := paired(f)
			rs := stats.PairedRatios(ons, offs)
			if len(rs) == 0 {
				return
			}
			fmt.Fprintf(w, "    %-22s %8.4g vs %-8.4g %s; %s ÷ %s %.3f (%.2f-%.2f)", name, stats.MedianOf(on.rounds, f), stats.MedianOf(off.rounds, f), unit,
				an, bn, stats.Median(rs), slices.Min(rs), slices.Max(rs))
			if diff {
				ds := make([]float64, len(ons))
				for k := range ons {
					ds[k] = ons[k] - offs[k]
				}
				fmt.Fprintf(w, "; %s − %s %.4g %s (%.4g to %.4g)", an, bn, stats.Median(ds), unit, slices.Min(ds), slices.Max(ds))
			}
			fmt.Fprintln(w)
		}
		pairs, _ := paired(func(result) float64 { return 1 })
		fmt.Fprintf(w, "  %s (%d rounds paired):\n", on.setup, len(pairs))
		line("job-ticks run", "share", result.ranShare, false)
		line("redis CPU", "µs/job/tick", func(r result) float64 { return 1e6 * r.redisCPU / r.jobTicks() }, true)
		line("replicas CPU", "µs/job/tick", func(r result) float64 { return 1e6 * r.procCPU / r.jobTicks() }, true)
		line("redis + replicas CPU", "µs/job/tick", result.cpuUs, true)
		line("calls", "/job/tick", result.callsPerJobTick, false)
		line("server cmds", "/job/tick", result.serverCmds, true)
		line("start p50", "ms", func(r result) float64 { return stats.Millis(r.p50) }, false)
		line("start p99", "ms", func(r result) float64 { return stats.Millis(r.p99) }, false)
		line("heap per job", "B", func(r result) float64 { return r.heapPerJob }, false)
		line("registration", "ms", func(r result) float64 { return stats.Millis(r.register) }, false)
	}
}

// writeGoals evaluates the goals on the summaries of runs with the given
// lock-ahead and ledger setting, by this build's replicas.
func writeGoals(w io.Writer, cfg config, sums []summary, ahead time.Duration, noLedger bool) {
	var one, goal *summary
	for i := range sums {
		if sums[i].ahead != ahead || sums[i].noLedger != noLedger || sums[i].baseline {
			continue
		}
		switch sums[i].jobs {
		case 1:
			one = &sums[i]
		case goalJobs:
			goal = &sums[i]
		}
	}
	switch {
	case len(cfg.ledgerModes()) > 1:
		fmt.Fprintf(w, " lock-ahead %v, ledger %s:\n", ahead, onOff(!noLedger))
	case len(cfg.aheads) > 1:
		fmt.Fprintf(w, " lock-ahead %v:\n", ahead)
	}
	if goal == nil {
		fmt.Fprintf(w, "  (not evaluated: no run with %d jobs)\n", goalJobs)
		return
	}
	limit := float64((cfg.replicas + goalCallsPerN) * cfg.nodes)
	if one != nil {
		ratio, met := "-", false // without data on either side, not met
		if goal.p99.ok() && one.p99.ok() && one.p99.d > 0 {
			r := float64(goal.p99.d) / float64(one.p99.d)
			ratio, met = fmt.Sprintf("%.2f×", r), r <= goalP99Ratio
		}
		fmt.Fprintf(w, "  p99 start delay at %d jobs within %.0f× that of 1 job: %s vs %s (%s and %s runs a round) = %s: %s\n",
			goalJobs, goalP99Ratio, goal.p99, one.p99, goal.p99.samples(), one.p99.samples(), ratio, metStr(met))
	}
	fmt.Fprintf(w, "  p99 start delay at %d jobs under %v: %s: %s\n", goalJobs, goalP99, goal.p99, metStr(goal.p99.ok() && goal.p99.d < goalP99))
	fmt.Fprintf(w, "  zero duplicates and zero misses at %d jobs: %d duplicates, %d misses: %s\n",
		goalJobs, goal.duplicates, goal.misses, metStr(goal.duplicates == 0 && goal.misses == 0))
	fmt.Fprintf(w, "  calls per job and tick at %d jobs ≤ (replicas + %d) × nodes = %.0f: %.2f: %s\n",
		goalJobs, goalCallsPerN, limit, goal.calls, metStr(goal.calls <= limit))
}

// perJobTick formats the median over rounds of each command's count per
// job and tick, largest first.
func perJobTick(rs []result, counts func(result) map[string]uint64) string {
	names := map[string]bool{}
	for _, r := range rs {
		for k := range counts(r) {
			names[k] = true
		}
	}
	type kv struct {
		k string
		v float64
	}
	var kvs []kv
	for k := range names {
		v := stats.MedianOf(rs, func(r result) float64 { return float64(counts(r)[k]) / r.jobTicks() })
		kvs = append(kvs, kv{k, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int {
		switch {
		case a.v > b.v:
			return -1
		case a.v < b.v:
			return 1
		}
		return strings.Compare(a.k, b.k)
	})
	parts := make([]string, len(kvs))
	for i, e := range kvs {
		parts[i] = fmt.Sprintf("%s %.3g", e.k, e.v)
	}
	return strings.Join(parts, ", ")
}

func metStr(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
