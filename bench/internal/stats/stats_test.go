package stats

import (
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	eight := ms(1, 2, 3, 4, 5, 6, 7, 8)
	hundred := make([]time.Duration, 200)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 0.99, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"p50 of 8", eight, 0.5, 4 * time.Millisecond},
		// With 8 samples, as schedbench's J = 1 rounds had, p99 is the
		// maximum.
		{"p99 of 8", eight, 0.99, 8 * time.Millisecond},
		// With 200, the 198th.
		{"p99 of 200", hundred, 0.99, 198 * time.Millisecond},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if got := MedianDuration([]time.Duration{time.Second, 3 * time.Second}); got != 2*time.Second {
		t.Errorf("MedianDuration = %v, want 2s", got)
	}
}

func TestPairedRatios(t *testing.T) {
	// The rounds drift: the ratio of the medians (200 / 150 = 1.33) is
	// not what any round measured; the median of the per-round ratios is.
	raw := []float64{100, 200, 300}
	impl := []float64{150, 100, 300}
	rs := PairedRatios(raw, impl)
	if want := []float64{100.0 / 150, 2, 1}; !slices.Equal(rs, want) {
		t.Fatalf("PairedRatios = %v, want %v", rs, want)
	}
	if got := Median(rs); got != 1 {
		t.Errorf("median of the ratios = %v, want 1", got)
	}
	// Pairs with a zero or a missing side are left out.
	if got := PairedRatios([]float64{1, 0, 4, 5}, []float64{2, 3, 0}); !slices.Equal(got, []float64{0.5}) {
		t.Errorf("PairedRatios with zeros = %v, want [0.5]", got)
	}
}

func TestTicksFor(t *testing.T) {
	for _, tc := range []struct{ jobs, ticks, min, want int }{
		{1, 8, 200, 200},
		{1, 5, 200, 200},
		{3, 8, 200, 67}, // 201 samples
		{25, 8, 200, 8},
		{24, 8, 200, 9}, // 216
		{100, 8, 200, 8},
		{1000, 5, 200, 5},
		{1, 8, 0, 8},
		{5, 2, 4, 2},
		{1, 2, 4, 4},
	} {
		if got := TicksFor(tc.jobs, tc.ticks, tc.min); got != tc.want {
			t.Errorf("TicksFor(%d, %d, %d) = %d, want %d", tc.jobs, tc.ticks, tc.min, got, tc.want)
		}
		if got := TicksFor(tc.jobs, tc.ticks, tc.min); got*tc.jobs < tc.min {
			t.Errorf("TicksFor(%d, %d, %d) = %d: %d samples, fewer than %d", tc.jobs, tc.ticks, tc.min, got, got*tc.jobs, tc.min)
		}
	}
}
