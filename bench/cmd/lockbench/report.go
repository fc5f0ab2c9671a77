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
	// VsRaw is raw's ops/s ÷ this one's, in the same scenario: 1.10 means
	// 10% slower than raw. 0 when raw was not measured.
	VsRaw    float64     `json:"time_ratio_vs_raw"`
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
		j := slices.IndexFunc(sums, func(s summary) bool { return s.scenario == sums[i].scenario && s.Impl == "raw" })
		if j >= 0 && sums[i].OpsPerSec > 0 {
			sums[i].VsRaw = sums[j].OpsPerSec / sums[i].OpsPerSec
		}
	}
	return sums
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
		if s.VsRaw > 0 {
			vs = fmt.Sprintf("%.2f", s.VsRaw)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%.0f\t%.0f%%\t%.0f\t%.0f\t%s\t%.1f%%\t%d\n",
			s.Nodes, s.Goroutines, s.Names, s.Impl, s.OpsPerSec, 100*s.Spread, s.P50us, s.P99us, vs, 100*s.Acquired, s.Errors)
	}
	tw.Flush()
}

func writeJSON(w io.Writer, m machine.Machine, cfg config, sums []summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Machine machine.Machine `json:"machine"`
		Run     string          `json:"run"`
		Results []summary       `json:"results"`
	}{m, runLine(cfg), sums})
}
