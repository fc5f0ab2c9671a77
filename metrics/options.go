package metrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcron/redcron/mutex"
)

// Option configures a Collector in New.
type Option func(*config) error

// config is what New builds a Collector from.
type config struct {
	namespace      string
	constLabels    prometheus.Labels
	runBuckets     []float64
	delayBuckets   []float64
	acquireBuckets []float64
	nodes          []string
}

func defaultConfig() config {
	return config{
		namespace:      "redcron",
		runBuckets:     defaultRunBuckets(),
		delayBuckets:   defaultDelayBuckets(),
		acquireBuckets: defaultAcquireBuckets(),
	}
}

// The default buckets are returned by functions, not kept in package
// variables, so that no caller can change them for every Collector.

// defaultRunBuckets: prometheus.DefBuckets (5ms to 10s) extended to an hour.
func defaultRunBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
}

// defaultDelayBuckets: 1ms to one minute, the default misfire grace.
func defaultDelayBuckets() []float64 {
	return []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
}

// defaultAcquireBuckets: 0.5ms to 2.5s; one attempt is at most three round
// trips bounded by the node timeout (250ms by default).
func defaultAcquireBuckets() []float64 {
	return []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
}

func optionError(option, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", mutex.ErrInvalidOption, option, fmt.Sprintf(format, args...))
}

// WithNamespace sets the first component of every metric name. The default
// is "redcron", which the dashboard and the alerting
// rules in examples/monitoring assume. It must match [a-zA-Z_][a-zA-Z0-9_]*.
// To add a prefix or labels to the metrics of every library at once, use
// prometheus.WrapRegistererWithPrefix or WrapRegistererWith instead.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if !validName(ns) {
			return optionError("WithNamespace", "%q does not match [a-zA-Z_][a-zA-Z0-9_]*", ns)
		}
		c.namespace = ns
		return nil
	}
}

// WithConstLabels adds labels with fixed values to every metric (default
// none), for example the name of the service embedding the scheduler when
// several share a Prometheus job. Label names must match
// [a-zA-Z_][a-zA-Z0-9_]*, must not start with "__" and must not be one of
// the labels the Collector sets itself (job_name, result, reason, node,
// vote, class) or "le"; values must be valid UTF-8. The map is copied.
// Given more than once, the label sets are merged.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) error {
		for _, name := range slices.Sorted(maps.Keys(labels)) {
			switch {
			case !validName(name) || strings.HasPrefix(name, "__"):
				return optionError("WithConstLabels", "label name %q is not a valid label name", name)
			case reservedLabel(name):
				return optionError("WithConstLabels", "label name %q is reserved by the Collector", name)
			case !utf8.ValidString(labels[name]):
				return optionError("WithConstLabels", "value of label %q is not valid UTF-8", name)
			}
		}
		if c.constLabels == nil {
			c.constLabels = prometheus.Labels{}
		}
		maps.Copy(c.constLabels, labels)
		return nil
	}
}

// reservedLabel reports whether name is a label the Collector sets itself,
// or the histogram bucket label.
func reservedLabel(name string) bool {
	switch name {
	case jobLabel, resultLabel, reasonLabel, nodeLabel, voteLabel, classLabel, "le":
		return true
	}
	return false
}

// WithBuckets sets the upper bounds, in seconds, of the buckets of one
// histogram, named by the end of its metric name:
//   - "run_duration" (redcron_scheduler_run_duration_seconds): by default
//     prometheus.DefBuckets extended to an hour: .005, .01, .025, .05, .1,
//     .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600;
//   - "start_delay" (redcron_scheduler_start_delay_seconds): by default 1ms
//     to a minute (the default misfire grace): .001, .0025, .005, .01,
//     .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60;
//   - "acquire_duration" (redcron_lock_acquire_duration_seconds): by
//     default 0.5ms to 2.5s: .0005, .001, .0025, .005, .01, .025, .05, .1,
//     .25, .5, 1, 2.5.
//
// The bounds must be strictly increasing and not NaN; the +Inf bucket is
// always added.
func WithBuckets(histogram string, b ...float64) Option {
	return func(c *config) error {
		opt := "WithBuckets(" + histogram + ")"
		bs, err := checkBuckets(opt, b)
		switch histogram {
		case "run_duration":
			c.runBuckets = bs
		case "start_delay":
			c.delayBuckets = bs
		case "acquire_duration":
			c.acquireBuckets = bs
		default:
			return optionError("WithBuckets", "unknown histogram %q: run_duration, start_delay or acquire_duration", histogram)
		}
		return err
	}
}

// checkBuckets validates and copies histogram bucket bounds.
func checkBuckets(option string, b []float64) ([]float64, error) {
	if len(b) == 0 {
		return nil, optionError(option, "no buckets")
	}
	for i, v := range b {
		switch {
		case math.IsNaN(v):
			return nil, optionError(option, "bucket %d is NaN", i)
		case i > 0 && v <= b[i-1]:
			return nil, optionError(option, "buckets are not strictly increasing: %v after %v", v, b[i-1])
		case math.IsInf(v, 1) && i != len(b)-1:
			return nil, optionError(option, "+Inf is not the last bucket")
		}
	}
	return slices.Clone(b), nil
}

// WithNodes declares the names of the Redis nodes (as given to
// store.NewNode) so that their series exist before the first lock
// operation: redcron_lock_node_up at 1, redcron_lock_node_warming_up at 0
// and redcron_lock_node_errors_total at 0. Without it (the default) a
// node's series appear with its first answer. Names must not be empty.
// Given more than once, the lists add up.
func WithNodes(names ...string) Option {
	return func(c *config) error {
		for i, n := range names {
			if n == "" || !utf8.ValidString(n) {
				return optionError("WithNodes", "node name %d (%q) is empty or not valid UTF-8", i, n)
			}
		}
		c.nodes = append(c.nodes, names...)
		return nil
	}
}

// validName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]*.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
