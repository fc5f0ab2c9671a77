// Package cluster is what an operator does with a fleet's nodes, under the
// public admin API (package admin, which the admin command, cmd/redcronctl,
// and the status page use), and the status page's own reads: each job's pause, holder and last runs, each node's health,
// each replica as its heartbeat describes it, a job's history, and the
// actions: pause and resume a job, trigger it, fix leaked locks. Every
// action is recorded in the job's ledger as an operator's record (who,
// when, what), on every node that takes it.
//
// It works on the nodes themselves (internal/engine), with no Redlock: an
// admin program has none. Its errors carry the nodes' own words, and its
// records the runs' errors: callers pass them, and the nodes' names,
// through internal/redact before showing them.
package cluster
