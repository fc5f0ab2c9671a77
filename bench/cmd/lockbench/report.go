package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/locks"
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

// ledgerCost is what the lock ledger costs one redcron variant in one
// scenario: the variant (ledger on, the default) against its twin with
// the ledger off (the same name with locks.NoLedgerSuffix), round by round.
type ledgerCost struct {
	scenario
	Impl string `json:"impl"` // the variant with the ledger on
	// Time is the median over rounds of the twin's ops/s ÷ this one's in
	// the same round: time per cycle with the ledger on ÷ off (1.05 = 5%
	// slower), with the extremes of the per-round ratios; P50 and P99 the
	// same for each round's latency percentile, on ÷ off.
	Time    float64 `json:"time_ratio_on_off"`
	TimeMin float64 `json:"time_ratio_on_off_min"`
	TimeMax float64 `json:"time_ratio_on_off_max"`
	P50     float64 `json:"p50_ratio_on_off"`
	P50Min  float64 `json:"p50_ratio_on_off_min"`
	P50Max  float64 `json:"p50_ratio_on_off_max"`
	P99     float64 `json:"p99_ratio_on_off"`
	// The medians over rounds of each side.
	OnOps    float64 `json:"on_ops_per_sec"`
	OffOps   float64 `json:"off_ops_per_sec"`
	OnP50us  float64 `json:"on_p50_us"`
	OffP50us float64 `json:"off_p50_us"`
}

// ledgerCosts pairs every measured "-noledger" variant with its twin in
// the same scenario.
func ledgerCosts(results []result) []ledgerCost {
	out := []ledgerCost{}
	for _, off := range results {
		name, ok := strings.CutSuffix(off.impl, locks.NoLedgerSuffix)
		if !ok {
			continue
		}
		j := slices.IndexFunc(results, func(r result) bool { return r.scenario == off.scenario && r.impl == name })
		if j < 0 {
			continue
		}
		on := results[j]
		lat := func(rs []round, p func(round) time.Duration) []float64 {
			xs := make([]float64, len(rs))
			for i, r := range rs {
				xs[i] = micros(p(r))
			}
			return xs
		}
		p50 := func(r round) time.Duration { return r.p50 }
		p99 := func(r round) time.Duration { return r.p99 }
		c := ledgerCost{scenario: on.scenario, Impl: name,
			OnOps: stats.MedianOf(on.rounds, round.opsPerSec), OffOps: stats.MedianOf(off.rounds, round.opsPerSec),
			OnP50us:  stats.MedianOf(on.rounds, func(r round) float64 { return micros(r.p50) }),
			OffP50us: stats.MedianOf(off.rounds, func(r round) float64 { return micros(r.p50) })}
		if rs := stats.PairedRatios(opsPerSec(off.rounds), opsPerSec(on.rounds)); len(rs) > 0 {
			c.Time, c.TimeMin, c.TimeMax = stats.Median(rs), slices.Min(rs), slices.Max(rs)
		}
		if rs := stats.PairedRatios(lat(on.rounds, p50), lat(off.rounds, p50)); len(rs) > 0 {
			c.P50, c.P50Min, c.P50Max = stats.Median(rs), slices.Min(rs), slices.Max(rs)
		}
		c.P99 = stats.Median(stats.PairedRatios(lat(on.rounds, p99), lat(off.rounds, p99)))
		out = append(out, c)
	}
	return out
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

func writeTable(w io.Writer, m machine.Machine, cfg config, sums []summary, costs []ledgerCost) {
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
	if len(costs) > 0 {
		fmt.Fprintln(w, "\nledger on ÷ off (each redcron variant against its -noledger twin, median of the per-round ratios, min-max):")
		for _, c := range costs {
			fmt.Fprintf(w, "  %v, %s: time per cycle %.3f (%.2f-%.2f), %.0f vs %.0f ops/s; p50 %.3f (%.2f-%.2f), %.0f vs %.0f µs; p99 %.3f\n",
				c.scenario, c.Impl, c.Time, c.TimeMin, c.TimeMax, c.OnOps, c.OffOps, c.P50, c.P50Min, c.P50Max, c.OnP50us, c.OffP50us, c.P99)
		}
	}
}

func writeJSON(w io.Writer, m machine.Machine, cfg config, sums []summary, costs []ledgerCost) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Machine machine.Machine `json:"machine"`
		Run     string          `json:"run"`
		Results []summary       `json:"results"`
		Goals   []goalResult    `json:"goals"`
		Ledger  []ledgerCost    `json:"ledger"`
	}{m, runLine(cfg), sums, checkGoals(sums), costs})
}
