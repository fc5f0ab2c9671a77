// Package mutex implements the Redlock algorithm over N independent Redis
// masters (store.Node), with lease extension, lost-lease notification,
// fencing tokens and occurrence marks.
//
// A lock is held when a majority (N/2+1) of the nodes granted it and the
// time spent acquiring it, plus an allowance for clock drift, is less than
// its TTL. Every call fans out to all nodes in parallel, each call bounded by
// a per-node timeout, and is decided as soon as the outcome is known, so a
// slow or dead node costs nothing while a majority answers. A lock won
// (without an occurrence) is still sent to the nodes that had not answered,
// within the node timeout, so that it holds on every node that answers in
// time, not on a bare majority one failure from lost.
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
// and 3 s. A node's server is read (INFO) on the first call of each
// connection, and every 100 ms on a busy one: a restart closes the
// connections, so the later answers on one come from the server read
// (behind a proxy that keeps them open, see docs/lock.md).
//
// Waiting: Lock waits for a held lock without polling: a release publishes
// on the lock's channel (Redis pub/sub) while a waiter is subscribed, and
// the waiter tries again at once; a notification lost costs at most a
// retry delay. A Redlock's waiters for one name are served first come,
// first served; across Redlocks, the waiter that began first holds the
// lock's turn on the nodes, and no other acquisition succeeds until it is
// served or gives up, so none starves.
//
// Reentrancy: Go has no thread identity, so a lock's holder is the code
// running under its KeepAlive context. Lock or TryLock of the same name on
// the same Redlock under that context acquires the lock again at once (a
// new handle on the same hold, counted); the lock leaves the nodes when
// its last handle is released, kept alive until then.
//
// Costs: an acquisition that claims no occurrence reaches a node as plain
// commands rather than a script, and a lone release as a lean script; a
// Redlock of one node sends its calls from the caller's goroutine and
// commits the fence with the vote, so that on one node an acquisition and
// a release cost one round trip each, fencing or not. docs/lock.md has
// the details and their measured costs.
package mutex
