// Package leakscan finds the locks that redcron's replicas left behind, and
// keeps the heartbeats that tell them from the locks of live replicas.
//
// Every replica's Scanner publishes a heartbeat for its instance id on
// every node (Run). The locks of an owner without a live heartbeat on any
// node are orphaned: a replica that crashed, or whose lease outlived it.
// At an interval, one replica at a time scans every node (SCAN, never KEYS)
// and classifies the keys under the prefix: locks without expiry, orphaned
// locks, minority copies left by failed acquisitions, locks held longer
// than the max hold (over_age), and foreign keys (unparseable). It logs
// them and reports their counts (WithObserver; the metrics). Package admin
// and the admin command (cmd/redcronctl) list them and delete them by
// compare-and-delete.
//
// A heartbeat also says who the replica is: its version, a digest of its
// job table (WithReplicaInfo), its start and its clock offset from the
// nodes'. Each scan counts the distinct job tables of the live replicas
// and logs them when they differ (a deploy in progress, a replica that
// misses a job): Event.JobTables. The admin command's status lists them.
//
// The heartbeat is part of the lease's safety: a replica whose last
// successful heartbeat is older than its TTL neither wins nor extends
// leases (Check, given to the Redlock with mutex.WithOwnerCheck), so that a
// replica cut off from the nodes has lost its leases before the scan can
// call it dead. The root package redcron wires all this, through its
// internal package fleet, which runs the Scanner; the scheduler does not
// know it exists.
package leakscan
