package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
	"github.com/redcron/redcron/bench/internal/table"
)

// goal is the largest ratio of a bad condition's median acquire latency to
// the healthy one allowed for redcron.
const goal = 1.2

func writeReport(w io.Writer, m machine.Machine, cfg config, res map[key][]round) {
	m.WriteHeader(w)
	fmt.Fprintf(w, "run:     5 nodes, 1 goroutine, distinct names, lock TTL %v; first node: %s; slow = +%v per round trip through a proxy\n",
		10*time.Second, strings.Join(cfg.conditions, ", "), cfg.slow)
	pace := "back to back"
	if cfg.interval > 0 {
		pace = fmt.Sprintf("one started every %v", cfg.interval)
	}
	fmt.Fprintf(w, "         cycles %s; %d rounds × %v (at least %d cycles) per condition and implementation, interleaved round-robin; medians over rounds\n\n",
		pace, cfg.rounds, cfg.duration, cfg.minSamples)
	tw := table.New(w)
	fmt.Fprintln(tw, "impl\tfirst node\tacquire p50\tp99\tvs healthy\trelease p50\tcycles\tacquired\terrors\tfirst node: calls sent/skipped, pipelines ok/failed")
	for i, im := range cfg.impls {
		if i > 0 {
			fmt.Fprintln(tw, strings.Repeat("\t", 9))
		}
		var base time.Duration
		for _, cond := range cfg.conditions {
			rs, ok := res[key{cond, im.Name}]
			if !ok {
				continue
			}
			s := summarize(rs)
			if cond == healthy {
				base = s.acqP50
			}
			vs := "-"
			if base > 0 {
				ratio := float64(s.acqP50) / float64(base)
				vs = fmt.Sprintf("%.2f", ratio)
				if strings.HasPrefix(im.Name, "redcron") && cond != healthy {
					if ratio <= goal {
						vs += " met"
					} else {
						vs += " NOT met"
					}
				}
			}
			errs := fmt.Sprintf("%d", s.errors)
			if s.relErrs > 0 {
				errs += fmt.Sprintf(" (+%d release)", s.relErrs)
			}
			first := "-"
			if s.hasFirst {
				first = fmt.Sprintf("%d/%d, %d/%d", s.first.Calls, s.first.Skipped, s.first.Pipelines-s.first.Failed, s.first.Failed)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.1f%%\t%s\t%s\n", im.Name, cond,
				ms(s.acqP50), ms(s.acqP99), vs, ms(s.relP50), s.cycles, 100*float64(s.acquired)/float64(max(s.cycles, 1)), errs, first)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nvs healthy: this condition's median acquire latency ÷ the same implementation's healthy one; goal for redcron ≤ %.1f.\n", goal)
	fmt.Fprintln(w, "release p50: the release that follows an acquired attempt. errors: attempts that failed other than by a refusal.")
	fmt.Fprintln(w, "first node (redcron only, store.Node.Stats summed over rounds): script calls sent / calls failed at once (backing off, or")
	fmt.Fprintln(w, "context done while queued); pipelines that succeeded / failed (network error or timeout: each starts or extends a back-off).")
}

// ms formats d in milliseconds, with three decimals below 10 ms.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	if f < 10 {
		return fmt.Sprintf("%.3f ms", f)
	}
	return fmt.Sprintf("%.1f ms", f)
}
