package main

import (
	"fmt"
	"io"
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
func (r result) setup() setup { return setup{jobs: r.jobs, ahead: r.ahead, noLedger: r.noLedger} }
