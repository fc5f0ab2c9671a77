// Package metrics exports Prometheus metrics of the scheduler and of the
// Redlock. It never registers anything by itself and has no package-level
// state: build a Collector with New, plug its hooks into the scheduler and
// the Redlock, and register it on your own prometheus.Registerer:
//
//	m, err := metrics.New(metrics.WithNodes("redis-a:6379", "redis-b:6379", "redis-c:6379"))
//	if err != nil { ... }
//	reg.MustRegister(m)
//	locks, err := mutex.New(nodes, mutex.WithObserver(m.LockObserver()))
//	s, err := scheduler.New(scheduler.NewRedlockLocker(locks), scheduler.WithObserver(m.SchedulerObserver()))
//
// The hooks are called on the scheduler's and the lock's hot paths, from
// many goroutines: they do no I/O, allocate nothing in the common case and
// hold a lock only for the few atomic updates of one event.
//
// # Metrics
//
// With the default namespace "redcron" (WithNamespace), and the labels of
// WithConstLabels on every series:
//
//	name                                                 type       labels
//	redcron_scheduler_runs_total                         counter    job_name, result
//	redcron_scheduler_skips_total                        counter    job_name, reason
//	redcron_scheduler_missed_ticks_total                 counter    job_name, reason
//	redcron_scheduler_lock_retries_total                 counter    job_name
//	redcron_scheduler_run_duration_seconds               histogram  job_name
//	redcron_scheduler_start_delay_seconds                histogram  job_name
//	redcron_scheduler_last_success_timestamp_seconds     gauge      job_name
//	redcron_scheduler_runs_in_progress                   gauge      job_name
//	redcron_lock_acquire_attempts_total                  counter    result
//	redcron_lock_acquire_duration_seconds                histogram
//	redcron_lock_extensions_total                        counter    result
//	redcron_lock_releases_total                          counter    result
//	redcron_lock_leases_lost_total                       counter
//	redcron_lock_node_errors_total                       counter    node, vote
//	redcron_lock_node_up                                 gauge      node
//	redcron_lock_node_warming_up                         gauge      node
//	redcron_leak_scans_total                             counter    result
//	redcron_leaked_locks                                 gauge      class
//	redcron_leak_last_scan_success_timestamp_seconds     gauge
//	redcron_replica_clock_offset_seconds                 gauge
//	redcron_replica_job_tables                           gauge
//
// Label values:
//   - job_name: the registered job names. The label is not called "job"
//     because Prometheus sets its own job label (the scrape job) on every
//     series. Each job's series are created at 0 when the job is added
//     ("job_added") and deleted when it is removed, so never
//     register generated job names.
//   - result of runs: success, failure, panic, lock_lost, timeout, canceled
//     (string).
//   - reason of skips: held, already_run (both normal: another
//     replica ran the tick), overlap, misfire, no_quorum, lease_lost, paused,
//     max_runs (the replica's run slots were taken:
//     scheduler.WithMaxConcurrentRuns), overload (the replica's claims of
//     the job's shard were behind: no decision in time, the nodes not at
//     fault) (string); of missed ticks, the same but held and already_run, or
//     no_report when no live replica reported skipping the tick. A missed
//     tick is counted by the replica whose leak-scan turn found it (take
//     the sum across replicas); its series are created when it happens.
//   - result of acquire attempts: acquired, held, already_run, no_quorum, paused;
//     of extensions: extended, lost, no_quorum; of releases: released, lost,
//     no_quorum.
//   - node: the node names given to store.NewNode, learned from the nodes'
//     answers or declared with WithNodes. vote: timeout, unreachable, error
//     (the votes that are failures of the node: mutex.NodeResult.Vote).
//   - class: no_expiry, orphaned, minority, over_age, unparseable
//     (the leakscan.Class values); result of leak scans: ok, failed.
//
// Run ids, tokens, fences, instance ids and error texts are never labels.
//
// Every replica exports its own series: a tick runs on one replica and is
// skipped (held or already_run) on the others. Aggregate across
// replicas in queries, for example the time since a job last succeeded
// anywhere:
//
//	time() - max by (job_name) (redcron_scheduler_last_success_timestamp_seconds)
//
// The last success timestamp is the key metric of a batch job: alert when
// it is older than the job's interval. redcron_lock_node_up is 1 when the
// node's last answer to a lock operation or a heartbeat was not a failure; a node nobody
// asked yet counts as up. A node that is warming up
// (redcron_lock_node_warming_up 1) answers but its grants do not count
// until its server has been up for the max TTL (see
// mutex.WithTrustedNodes and mutex.NodeResult.WarmingUp); any answer of
// its to an acquisition, a refusal too, keeps it at 1 until then. The leak gauges hold the counts of the last
// successful scan of this replica (package leakscan); only one
// replica scans at a time, so take the max across replicas. So does
// redcron_replica_job_tables, the number of distinct job tables the live
// replicas publish in their heartbeats (leakscan.Event.JobTables): above 1
// while a deploy rolls out, or when some replica misses a job.
//
// examples/monitoring holds a Grafana dashboard and Prometheus alerting
// rules built on these metrics.
package metrics
