package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/bench/internal/table"
)

// summary is what the report says about one implementation in one
// scenario. Throughput and latencies are medians over the rounds.
type summary struct {
	scenario
	Impl      string  `json:"impl"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// Spread is (max − min) / median of the rounds' ops/s: the noise.
	Spread float64 `json:"ops_spread"`
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
	// VsRaw is the median over rounds of raw's ops/s ÷ this one's in the
	// same round and scenario (the rounds are interleaved, so round r of
	// both ran side by side): 1.10 means 10% slower than raw. VsRawMin and
	// VsRawMax are the extremes of those per-round ratios. 0 when raw was
	// not measured.
	VsRaw    float64     `json:"time_ratio_vs_raw"`
	VsRawMin float64     `json:"time_ratio_vs_raw_min"`
	VsRawMax float64     `json:"time_ratio_vs_raw_max"`
	Acquired float64     `json:"acquired_fraction"`
	Errors   int         `json:"errors"`
	Rounds   []roundJSON `json:"rounds"`
}

type roundJSON struct {
	Ops       int     `json:"ops"`
	Acquired  int     `json:"acquired"`
	Errors    int     `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
}

func micros(d time.Duration) float64 { return stats.Micros(d) }

func summarize(results []result) []summary {
	sums := make([]summary, len(results))
	for i, r := range results {
		s := summary{scenario: r.scenario, Impl: r.impl}
		s.OpsPerSec = stats.MedianOf(r.rounds, round.opsPerSec)
		s.P50us = stats.MedianOf(r.rounds, func(r round) float64 { return micros(r.p50) })
		s.P99us = stats.MedianOf(r.rounds, func(r round) float64 { return micros(r.p99) })
		var ops, acquired int
		lo, hi := r.rounds[0].opsPerSec(), r.rounds[0].opsPerSec()
		for _, rd := range r.rounds {
			ops, acquired, s.Errors = ops+rd.ops, acquired+rd.acquired, s.Errors+rd.errors
			lo, hi = min(lo, rd.opsPerSec()), max(hi, rd.opsPerSec())
			s.Rounds = append(s.Rounds, roundJSON{rd.ops, rd.acquired, rd.errors, rd.opsPerSec(), micros(rd.p50), micros(rd.p99)})
		}
		if ops > 0 {
			s.Acquired = float64(acquired) / float64(ops)
		}
		if s.OpsPerSec > 0 {
			s.Spread = (hi - lo) / s.OpsPerSec
		}
		sums[i] = s
	}
	for i := range sums {
		j := slices.IndexFunc(results, func(r result) bool { return r.scenario == results[i].scenario && r.impl == "raw" })
		if j < 0 {
			continue
		}
		ratios := stats.PairedRatios(opsPerSec(results[j].rounds), opsPerSec(results[i].rounds))
		if len(ratios) > 0 {
			sums[i].VsRaw, sums[i].VsRawMin, sums[i].VsRawMax = stats.Median(ratios), slices.Min(ratios), slices.Max(ratios)
		}
	}
	return sums
}

// opsPerSec returns the ops/s of each round, in round order.
func opsPerSec(rounds []round) []float64 {
	xs := make([]float64, len(rounds))
	for i, r := range rounds {
		xs[i] = r.opsPerSec()
	}
	return xs
}

// goal is a bound on one implementation's VsRaw in one scenario.
type goal struct {
	scenario
	impl string
	max  float64 // VsRaw at most
	text string
}

// goals are the throughput goals, on the median of the per-round ratios.
var goals = []goal{
	{scenario{5, 1, distinct}, "redcron-nofence", 1.3, "within 1.3× of raw's time per cycle"},
	{scenario{5, 1, contended}, "redcron-nofence", 1.3, "within 1.3× of raw's time per cycle"},
	{scenario{5, 16, distinct}, "redcron-nofence", 0.5, "at least 2× raw's throughput (vs raw ≤ 0.50)"},
	{scenario{5, 16, distinct}, "redcron-fence", 0.5, "at least 2× raw's throughput (vs raw ≤ 0.50)"},
}

// goalResult is one goal as measured.
type goalResult struct {
	Goal     string  `json:"goal"`
	VsRaw    float64 `json:"time_ratio_vs_raw"`
	VsRawMin float64 `json:"time_ratio_vs_raw_min"`
	VsRawMax float64 `json:"time_ratio_vs_raw_max"`
	Met      bool    `json:"met"`
}

// checkGoals evaluates the goals whose scenario and implementation were
// measured, with raw, on the median of the per-round ratios.
func checkGoals(sums []summary) []goalResult {
	out := []goalResult{}
	for _, g := range goals {
		i := slices.IndexFunc(sums, func(s summary) bool { return s.scenario == g.scenario && s.Impl == g.impl })
		if i < 0 || sums[i].VsRaw == 0 {
			continue
		}
		s := sums[i]
		out = append(out, goalResult{Goal: fmt.Sprintf("%v, %s: %s", g.scenario, g.impl, g.text),
			VsRaw: s.VsRaw, VsRawMin: s.VsRawMin, VsRawMax: s.VsRawMax, Met: s.VsRaw <= g.max})
	}
	return out
}

func runLine(cfg config) string {
	return fmt.Sprintf("%d rounds × %v per implementation and scenario, interleaved round-robin; medians over rounds", cfg.rounds, cfg.duration)
}

func writeTable(w io.Writer, m machine.Machine, cfg config, sums []summary) {
	m.WriteHeader(w)
	fmt.Fprintf(w, "run:     %s\n\n", runLine(cfg))
	tw := table.New(w)
	fmt.Fprintln(tw, "nodes\tgoroutines\tnames\timpl\tops/s\tspread\tp50 µs\tp99 µs\tvs raw\tacquired\terrors")
	for i, s := range sums {
		if i > 0 && s.scenario != sums[i-1].scenario {
			fmt.Fprintln(tw, strings.Repeat("\t", 10)) // keeps the columns aligned across groups
		}
		vs := "-"
		switch {
		case s.Impl == "raw" && s.VsRaw > 0:
			vs = fmt.Sprintf("%.2f", s.VsRaw)
		case s.VsRaw > 0:
			vs = fmt.Sprintf("%.2f (%.2f-%.2f)", s.VsRaw, s.VsRawMin, s.VsRawMax)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%.0f\t%.0f%%\t%.0f\t%.0f\t%s\t%.1f%%\t%d\n",
			s.Nodes, s.Goroutines, s.Names, s.Impl, s.OpsPerSec, 100*s.Spread, s.P50us, s.P99us, vs, 100*s.Acquired, s.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nvs raw: median over rounds of raw's ops/s ÷ this row's in the same round (min-max over rounds); 1.10 = 10% slower than raw.")
	if gs := checkGoals(sums); len(gs) > 0 {
		fmt.Fprintln(w, "\ngoals (on vs raw):")
		for _, g := range gs {
			met := "met"
			if !g.Met {
				met = "NOT met"
			}
			fmt.Fprintf(w, "  %s: %.2f (rounds %.2f-%.2f): %s\n", g.Goal, g.VsRaw, g.VsRawMin, g.VsRawMax, met)
		}
	}
}

func writeJSON(w io.Writer, m machine.Machine, cfg config, sums []summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Machine machine.Machine `json:"machine"`
		Run     string          `json:"run"`
		Results []summary       `json:"results"`
		Goals   []goalResult    `json:"goals"`
	}{m, runLine(cfg), sums, checkGoals(sums)})
}
