// Package stats has the few statistics the benchmarks report: nearest-rank
// percentiles, medians and ratios of paired measurements.
package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the nearest-rank p-quantile (0 < p <= 1) of sorted,
// or 0 when it is empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Median returns the median of xs, or 0 when it is empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianOf returns the median of f over xs.
func MedianOf[T any](xs []T, f func(T) float64) float64 {
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = f(x)
	}
	return Median(vs)
}

// MedianDuration returns the median of ds (the mean of the middle two
// when their number is even), or 0 when it is empty.
func MedianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(Median(xs))
}

// Spread returns (max − min) / median of xs: how noisy repeated
// measurements are. It is 0 when the median is.
func Spread(xs []float64) float64 {
	m := Median(xs)
	if len(xs) == 0 || m == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / m
}

// TicksFor returns how many ticks a round of jobs jobs, each run once a
// tick, measures so that its percentiles rest on at least minSamples runs:
// ticks, or more when jobs × ticks falls short, ceil(minSamples / jobs).
// (With 1 job and 8 ticks, a "p99" is the largest of 8 delays.)
func TicksFor(jobs, ticks, minSamples int) int {
	if jobs < 1 {
		return ticks
	}
	return max(ticks, (minSamples+jobs-1)/jobs)
}

// PairedRatios returns num[i] / den[i] for every i where both are
// positive: the ratios of paired measurements (round i of one
// implementation and round i of another, run one after the other), whose
// median is steadier than the ratio of the two medians when the machine
// drifts from round to round.
func PairedRatios(num, den []float64) []float64 {
	var rs []float64
	for i := range min(len(num), len(den)) {
		if num[i] > 0 && den[i] > 0 {
			rs = append(rs, num[i]/den[i])
		}
	}
	return rs
}

// Micros returns d in microseconds.
func Micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Millis returns d in milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
