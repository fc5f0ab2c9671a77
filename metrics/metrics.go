package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// Label names. Every label value is bounded: registered job names,
// configured node names, and the String values of the scheduler's and the
// mutex's enums.
const (
	// jobLabel is not "job": Prometheus attaches its own job label (the
	// scrape job) to every series, and a conflicting exposed label would
	// be renamed exported_job.
	jobLabel    = "job_name"
	resultLabel = "result"
	reasonLabel = "reason"
	nodeLabel   = "node"
	voteLabel   = "vote"
	classLabel  = "class"
)

// Collector is a prometheus.Collector of the scheduler's and the lock's
// metrics (see the package documentation for the list). It learns from the
// hooks returned by SchedulerObserver and LockObserver, registers nothing
// by itself and starts no goroutine: register it on your own
// prometheus.Registerer. Its methods and hooks are safe for concurrent use.
// Create it with New.
type Collector struct {
	// Scheduler metrics, by job.
	runs        *prometheus.CounterVec
	skips       *prometheus.CounterVec
	missed      *prometheus.CounterVec
	retries     *prometheus.CounterVec
	runDuration *prometheus.HistogramVec
	startDelay  *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	inProgress  *prometheus.GaugeVec

	// Lock metrics.
	acquires        *prometheus.CounterVec
	acquireDuration prometheus.Histogram
	extensions      *prometheus.CounterVec
	releases        *prometheus.CounterVec
	leasesLost      prometheus.Counter
	nodeErrors      *prometheus.CounterVec
	nodeUp          *prometheus.GaugeVec
	nodeWarmingUp   *prometheus.GaugeVec

	// Leak scan metrics.
	leakScans       *prometheus.CounterVec
	leaked          *prometheus.GaugeVec
	lastScanSuccess prometheus.Gauge
	clockOffset     prometheus.Gauge
	jobTables       prometheus.Gauge

	// all lists the metrics above, for Describe and Collect.
	all []prometheus.Collector

	// Children resolved once, so that the hooks do not hash label values.
	acquireBy [numAcquireResults]prometheus.Counter
	extendBy  [numOpResults]prometheus.Counter
	releaseBy [numOpResults]prometheus.Counter
	scanOK    prometheus.Counter
	scanFail  prometheus.Counter
	leakedBy  []prometheus.Gauge // by leakClasses()

	jobsMu sync.RWMutex
	jobs   map[string]*jobSeries // registered jobs

	nodesMu sync.RWMutex
	nodes   map[string]*nodeSeries // nodes seen or declared
}

// New returns a Collector configured by opts. It registers nothing and
// starts nothing; its error matches mutex.ErrInvalidOption when an option is
// refused.
//
//	m, err := metrics.New()
//	...
//	reg.MustRegister(m)
//	s, err := scheduler.New(locker, scheduler.WithObserver(m.SchedulerObserver()))
//	locks, err := mutex.New(nodes, mutex.WithObserver(m.LockObserver()))
func New(opts ...Option) (*Collector, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, optionError("New", "nil Option")
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	c := newCollector(cfg)
	for i := range numAcquireResults {
		c.acquireBy[i] = c.acquires.WithLabelValues(acquireResultName(i))
	}
	for i := range numOpResults {
		c.extendBy[i] = c.extensions.WithLabelValues(extendResultName(i))
		c.releaseBy[i] = c.releases.WithLabelValues(releaseResultName(i))
	}
	c.scanOK, c.scanFail = c.leakScans.WithLabelValues("ok"), c.leakScans.WithLabelValues("failed")
	for _, class := range leakClasses() {
		c.leakedBy = append(c.leakedBy, c.leaked.WithLabelValues(class))
	}
	for _, n := range cfg.nodes {
		c.node(n)
	}
	return c, nil
}

// families makes the metric families of one Collector, with its namespace
// and constant labels.
type families struct {
	ns string
	cl prometheus.Labels
}

func (f families) counter(sub, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: f.ns, Subsystem: sub, Name: name, Help: help, ConstLabels: f.cl}, labels)
}

func (f families) gauge(sub, name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: f.ns, Subsystem: sub, Name: name, Help: help, ConstLabels: f.cl}, labels)
}

func (f families) histogram(sub, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: f.ns, Subsystem: sub, Name: name, Help: help, ConstLabels: f.cl, Buckets: buckets}, labels)
}

// newCollector returns a Collector with every family made, no series yet.
func newCollector(cfg config) *Collector {
	f := families{ns: cfg.namespace, cl: cfg.constLabels}
	counter, gauge, histogram := f.counter, f.gauge, f.histogram
	ns, cl := cfg.namespace, cfg.constLabels
	c := &Collector{
		runs: counter("scheduler", "runs_total",
			"Runs of each job on this replica, by how they ended.", jobLabel, resultLabel),
		skips: counter("scheduler", "skips_total",
			"Ticks of each job that this replica did not run, by reason (held and already_run are normal: another replica ran them).", jobLabel, reasonLabel),
		missed: counter("scheduler", "missed_ticks_total",
			"Ticks of each job that ran on no replica, as this replica's missed-tick check found them, by the reason the replicas reported (paused, overlap, no_quorum, ..., no_report); each tick is counted once, fleet-wide.", jobLabel, reasonLabel),
		retries: counter("scheduler", "lock_retries_total",
			"Lock attempts of each job that reached no decision and were retried.", jobLabel),
		runDuration: histogram("scheduler", "run_duration_seconds",
			"How long the runs of each job took on this replica.", cfg.runBuckets, jobLabel),
		startDelay: histogram("scheduler", "start_delay_seconds",
			"Start of each scheduled run minus its tick, by this replica's clock.", cfg.delayBuckets, jobLabel),
		lastSuccess: gauge("scheduler", "last_success_timestamp_seconds",
			"Unix time of the last successful run of each job on this replica; 0 if none since the job was added. Take the max over replicas.", jobLabel),
		inProgress: gauge("scheduler", "runs_in_progress",
			"Runs of each job in progress on this replica.", jobLabel),
		acquires: counter("lock", "acquire_attempts_total",
			"Lock acquisition attempts, by result.", resultLabel),
		acquireDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: "lock", Name: "acquire_duration_seconds",
			Help: "How long lock acquisition attempts took, whatever their result.", ConstLabels: cl, Buckets: cfg.acquireBuckets}),
		extensions: counter("lock", "extensions_total",
			"Lease extensions, by result (lost: a majority no longer holds the lock or the validity ran out).", resultLabel),
		releases: counter("lock", "releases_total",
			"Lock releases, by result.", resultLabel),
		leasesLost: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "lock", Name: "leases_lost_total",
			Help: "Kept-alive leases that could no longer be proven; the job holding one was cancelled.", ConstLabels: cl}),
		nodeErrors: counter("lock", "node_errors_total",
			"Failed answers of each node to lock operations, by vote (timeout, unreachable, error).", nodeLabel, voteLabel),
		nodeUp: gauge("lock", "node_up",
			"1 if the last answer of the node to a lock operation was not a failure (timeout, unreachable, error), else 0.", nodeLabel),
		nodeWarmingUp: gauge("lock", "node_warming_up",
			"1 if the node's last answer to an acquisition showed it warming up (its server, new or restarted, started too recently to vote), so that its grants do not count, else 0.", nodeLabel),
		leakScans: counter("leak", "scans_total",
			"Leak scans made by this replica, by result (ok, failed).", resultLabel),
		leaked: gauge("", "leaked_locks",
			"Leaked locks found by the last successful leak scan of this replica, by class.", classLabel),
		lastScanSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: "leak", Name: "last_scan_success_timestamp_seconds",
			Help: "Unix time of the last successful leak scan of this replica; 0 if none.", ConstLabels: cl}),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: "replica", Name: "clock_offset_seconds",
			Help: "This replica's clock minus the nodes' (median of their TIME), measured by its last heartbeat; past 2 s in either direction it claims no tick.", ConstLabels: cl}),
		jobTables: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: "replica", Name: "job_tables",
			Help: "Distinct job tables among the live replicas' heartbeats, as the last successful leak scan of this replica found them: 1 when every replica runs the same jobs; 0 if none publishes its table.", ConstLabels: cl}),

		jobs:  map[string]*jobSeries{},
		nodes: map[string]*nodeSeries{},
	}
	c.all = []prometheus.Collector{
		c.runs, c.skips, c.missed, c.retries, c.runDuration, c.startDelay, c.lastSuccess, c.inProgress,
		c.acquires, c.acquireDuration, c.extensions, c.releases, c.leasesLost,
		c.nodeErrors, c.nodeUp, c.nodeWarmingUp,
		c.leakScans, c.leaked, c.lastScanSuccess, c.clockOffset, c.jobTables,
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.all {
		m.Collect(ch)
	}
}

// SchedulerObserver returns the hook to pass to scheduler.WithObserver. It
// creates a job's series at 0 on "job_added" and deletes them on
// "job_removed"; events about a job that is not registered (a
// run that ends after its job was removed) are not counted. When several
// Schedulers share the Collector, a job's series live while any of them has
// the job.
func (c *Collector) SchedulerObserver() func(scheduler.Event) { return c.observeScheduler }

// LockObserver returns the hook to pass to mutex.WithObserver. The lock
// metrics count every lock of the Redlock.
func (c *Collector) LockObserver() func(mutex.Event) { return c.observeLock }

var _ prometheus.Collector = (*Collector)(nil)
