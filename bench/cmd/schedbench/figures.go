package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/bench/internal/table"
)

// The headline figures of a round (issue 30's "Measure it"), each derived
// from what runOnce measured.

// due is the number of (job, tick) pairs the window calls for.
func (r result) due() int { return r.jobs * r.ticks }

// ranShare is the share of the due job-ticks that ran at least once.
func (r result) ranShare() float64 { return float64(r.ranPairs) / float64(max(r.due(), 1)) }

// serverCmds is the number of commands the servers ran per job-tick, those
// inside scripts included (INFO commandstats, the benchmark's own INFO
// taken out).
func (r result) serverCmds() float64 {
	var n uint64
	for _, v := range r.server {
		n += v
	}
	return float64(n) / r.jobTicks()
}

// cpuUs is the CPU of the servers and the replicas per job-tick, µs.
func (r result) cpuUs() float64 { return 1e6 * (r.redisCPU + r.procCPU) / r.jobTicks() }

// cores is the CPU of the servers and the replicas over the window, in
// cores (CPU seconds per second).
func (r result) cores() float64 {
	if r.window <= 0 {
		return 0
	}
	return (r.redisCPU + r.procCPU) / r.window.Seconds()
}

// shares returns the least and the largest share of the window's runs a
// replica started (0, 0 without runs).
func (r result) shares() (lo, hi float64) {
	if r.runs == 0 || len(r.perReplica) == 0 {
		return 0, 0
	}
	lo, hi = 1, 0
	for _, n := range r.perReplica {
		f := float64(n) / float64(r.runs)
		lo, hi = min(lo, f), max(hi, f)
	}
	return lo, hi
}

// writeFigures writes the headline figures: one line per round, then the
// medians over rounds of each setup (sums for missed and twice).
func writeFigures(w io.Writer, cfg config, results []result, sums []summary) {
	rush := cfg.rush
	head := "setup\tround\tdue\tran\tmissed\ttwice\tstart p50\tp99\tmax"
	if rush {
		head += "\twithin 2 s"
	}
	head += "\tcalls/job-tick\tserver cmds/job-tick\tCPU µs/job-tick\tCPU cores\treplica share\theap B/job\tregister"
	fmt.Fprintln(w, "per round:")
	tw := table.New(w)
	fmt.Fprintln(tw, head)
	for _, su := range cfg.setups() {
		for _, r := range results {
			if r.setup() != su {
				continue
			}
			lo, hi := r.shares()
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s", su, r.round+1, r.due(), ranStr(r.ranPairs, r.due()), r.misses, r.duplicates,
				msOrDash(r.p50, r.runs), msOrDash(r.p99, r.runs), msOrDash(r.maxDelay, r.runs))
			if rush {
				fmt.Fprintf(tw, "\t%d", r.within2s)
			}
			fmt.Fprintf(tw, "\t%.2f\t%.1f\t%.1f\t%.2f\t%.0f-%.0f%%\t%.0f\t%s\n", r.callsPerJobTick(), r.serverCmds(), r.cpuUs(), r.cores(),
				100*lo, 100*hi, r.heapPerJob, r.register.Round(time.Millisecond))
		}
	}
	tw.Flush()

	fmt.Fprintln(w, "\nmedians over rounds (missed, twice: sums):")
	tw = table.New(w)
	fmt.Fprintln(tw, head)
	for _, s := range sums {
		rs := s.rounds
		med := func(f func(result) float64) float64 { return stats.MedianOf(rs, f) }
		due := med(func(r result) float64 { return float64(r.due()) })
		ran := med(func(r result) float64 { return float64(r.ranPairs) })
		lo := med(func(r result) float64 { l, _ := r.shares(); return l })
		hi := med(func(r result) float64 { _, h := r.shares(); return h })
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%d\t%d\t%s\t%s\t%s", s.setup, len(rs), due, ranStr(int(ran), int(due)), s.misses, s.duplicates,
			s.p50, s.p99, s.maxDelay)
		if rush {
			fmt.Fprintf(tw, "\t%.0f", med(func(r result) float64 { return float64(r.within2s) }))
		}
		fmt.Fprintf(tw, "\t%.2f\t%.1f\t%.1f\t%.2f\t%.0f-%.0f%%\t%.0f\t%s\n", s.calls, s.server, med(result.cpuUs), med(result.cores),
			100*lo, 100*hi, med(func(r result) float64 { return r.heapPerJob }),
			time.Duration(med(func(r result) float64 { return float64(r.register) })).Round(time.Millisecond))
	}
	tw.Flush()
	legend := `
due: job-ticks the window calls for (jobs × ticks); ran: those with at least one run_started event, and their share;
missed: job-ticks run by no replica, twice: run more than once (by the events or the jobs' own records). start: the
runs' start delay (EventRunStarted.StartDelay), "-" without runs; in the medians, max is the largest of all rounds.
calls/job-tick: script calls and plain commands the replicas sent; server cmds/job-tick: every command the servers ran,
those run inside scripts included (INFO commandstats deltas summed over the servers, the benchmark's own INFO taken out).
CPU: the servers' and the replicas' processes', per job-tick and in cores over the window. replica share: the least
and the largest share of the window's runs one replica started. heap B/job: the live heap (HeapAlloc after a GC) after registering
the jobs minus before, ÷ jobs, the largest of the replicas; register: the slowest replica's time to add the jobs.`
	if cfg.baseline != "" {
		legend += "\nbaseline: the replicas ran " + cfg.baseline + ", built at " + builds(results, true) +
			"; the others this build, " + builds(results, false) + "."
	}
	if rush {
		legend += `
within 2 s: runs started at most 2 s after the tick; the rush's window is its one tick and the idle time after it.`
	}
	fmt.Fprintln(w, legend)
}

// ranStr formats ran of due, with the share.
func ranStr(ran, due int) string {
	return fmt.Sprintf("%d (%s)", ran, pct(float64(ran)/float64(max(due, 1))))
}

// pct formats a share as a percentage, with a decimal below 10 %
// ("0.3 %"), and two below 1 %, so that a collapse does not read 0.
func pct(f float64) string {
	switch p := 100 * f; {
	case p == 0 || p == 100:
		return fmt.Sprintf("%.0f %%", p)
	case p < 1:
		return fmt.Sprintf("%.2f %%", p)
	case p < 10 || p > 99:
		return fmt.Sprintf("%.1f %%", p)
	default:
		return fmt.Sprintf("%.0f %%", p)
	}
}

// msOrDash formats d in milliseconds, or "-" without samples.
func msOrDash(d time.Duration, samples int) string {
	if samples == 0 {
		return "-"
	}
	return ms(d)
}

// setup returns the setup r was measured with.
func (r result) setup() setup {
	return setup{jobs: r.jobs, ahead: r.ahead, noLedger: r.noLedger, baseline: r.baseline}
}

// Issue 30's goals, for 3 replicas and 5 nodes on this machine.
const (
	goal30Jobs    = 10_000                 // sustained, one-second jobs
	goal30P99     = 100 * time.Millisecond // start delay p99, sustained
	goal30Cores   = 1.0                    // Redis and replicas, sustained
	goal30Cmds    = 5.0                    // server commands per job-tick, sustained
	goal30ShareLo = 0.25                   // each replica's share of the job-ticks run
	goal30ShareHi = 0.42
	goal30Rush    = 100_000 // jobs due at one instant
	goal30Within  = 2 * time.Second
	goal30Reg     = time.Second // registering goal30Rush jobs
	goal30Heap    = 1024        // bytes per registered job per replica
)

// writeGoals30 evaluates issue 30's goals on every setup of the number
// of jobs they are stated for: goal30Jobs sustained, goal30Rush in the
// rush.
func writeGoals30(w io.Writer, cfg config, sums []summary) {
	want := goal30Jobs
	if cfg.rush {
		want = goal30Rush
	}
	n := 0
	for _, s := range sums {
		if s.jobs != want {
			continue
		}
		n++
		rs := s.rounds
		med := func(f func(result) float64) float64 { return stats.MedianOf(rs, f) }
		fmt.Fprintf(w, " issue 30, %s:\n", s.setup)
		fmt.Fprintf(w, "  0 run twice, 0 missed: %d twice, %d missed: %s\n", s.duplicates, s.misses, metStr(s.duplicates == 0 && s.misses == 0))
		if cfg.rush {
			all := !slices.ContainsFunc(rs, func(r result) bool { return r.within2s < r.due() })
			fmt.Fprintf(w, "  every job started within %v of the tick: %.0f of %d (median), the last %s after it: %s\n", goal30Within,
				med(func(r result) float64 { return float64(r.within2s) }), want, s.maxDelay, metStr(all))
			reg := time.Duration(med(func(r result) float64 { return float64(r.register) }))
			fmt.Fprintf(w, "  registering %d jobs under %v: %v: %s\n", want, goal30Reg, reg.Round(time.Millisecond), metStr(reg < goal30Reg))
			heap := med(func(r result) float64 { return r.heapPerJob })
			fmt.Fprintf(w, "  heap per registered job per replica under %d B: %.0f B: %s\n", goal30Heap, heap, metStr(heap < goal30Heap))
			continue
		}
		fmt.Fprintf(w, "  p99 start delay under %v: %s: %s\n", goal30P99, s.p99, metStr(s.p99.ok() && s.p99.d < goal30P99))
		cores := med(result.cores)
		fmt.Fprintf(w, "  total CPU (Redis and replicas) under %.0f core: %.2f: %s\n", goal30Cores, cores, metStr(cores < goal30Cores))
		fmt.Fprintf(w, "  server commands per job-tick under %.0f: %.1f: %s\n", goal30Cmds, s.server, metStr(s.server < goal30Cmds))
		inRange := !slices.ContainsFunc(rs, func(r result) bool {
			lo, hi := r.shares()
			return lo < goal30ShareLo || hi > goal30ShareHi
		})
		lo := slices.MinFunc(rs, func(a, b result) int { l, _ := a.shares(); m, _ := b.shares(); return cmp.Compare(l, m) })
		hi := slices.MaxFunc(rs, func(a, b result) int { _, l := a.shares(); _, m := b.shares(); return cmp.Compare(l, m) })
		l, _ := lo.shares()
		_, h := hi.shares()
		fmt.Fprintf(w, "  each replica's share of the job-ticks run between %.0f%% and %.0f%% in every round: %.0f-%.0f%%: %s\n",
			100*goal30ShareLo, 100*goal30ShareHi, 100*l, 100*h, metStr(inRange))
	}
	if n == 0 {
		fmt.Fprintf(w, " issue 30: not evaluated: no run with %d jobs\n", want)
	}
}

// builds returns the commits the replicas of the baseline's rounds (or of
// the others) reported they were built from.
func builds(results []result, baseline bool) string {
	var bs []string
	for _, r := range results {
		if r.baseline == baseline {
			bs = append(bs, r.builds...)
		}
	}
	slices.Sort(bs)
	bs = slices.Compact(bs)
	if len(bs) == 0 {
		return "unknown"
	}
	return strings.Join(bs, ", ")
}
