// Package mutex implements the Redlock algorithm over N independent Redis
// masters (store.Node), with lease extension, lost-lease notification,
// fencing tokens and occurrence marks.
//
// A lock is held when a majority (N/2+1) of the nodes granted it and the
// time spent acquiring it, plus an allowance for clock drift, is less than
// its TTL. Every call fans out to all nodes in parallel, each call bounded by
// a per-node timeout, and is decided as soon as the outcome is known, so a
// slow or dead node costs nothing while a majority answers.
//
// Fencing tokens: every acquisition of a name gets a token larger than any
// earlier acquisition's. Each node keeps a counter per name; the acquirer
// takes the maximum over the nodes that granted it, adds one (or takes the
// current time in microseconds, whichever is larger) and writes it back to
// a majority before the lock counts as acquired. Any two majorities share a
// node, so the next winner reads a counter at least as large. The time floor
// keeps tokens increasing even when a majority of nodes lost their data,
// unless clocks also went backwards.
//
// Occurrence marks: an acquisition may name an occurrence (a scheduled tick).
// Nodes refuse an occurrence at or below their mark, and the winner raises
// the mark on a majority, so no two acquisitions of a name ever win the same
// occurrence, whatever the callers' clocks say.
//
// Restarts: a node that restarted without persistence has forgotten its
// locks and marks. Unless the nodes are declared trusted (WithTrustedNodes),
// the vote of a node whose uptime is below the maximum TTL does not count,
// nor its vote for an occurrence earlier than its start plus the max TTL
// and 3 s.
package mutex
