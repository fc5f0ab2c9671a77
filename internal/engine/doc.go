// Package engine is the Redis layer under redcron's locks: one Node per
// independent Redis master, the key layout, the Lua scripts that act on one
// node atomically, the lock value format, and SCAN-based listing of the
// library's keys. Package store gives users the Node; mutex, leakscan and
// the admin command use the rest.
//
// A Node never retries and never decides anything about quorums: that is
// the job of package mutex, which runs the Redlock algorithm over several
// Nodes. Scripts are embedded in the binary and sent with EVALSHA; a server
// that does not have them cached (NOSCRIPT) gets the calls again as EVAL,
// with the script's text, in one round trip.
//
// Lock calls to a node are pipelined (one worker per node sends whatever
// is queued in one round trip), and every lock script acts on any number
// of locks: AcquireAll and CommitAll send many locks in one script call,
// and the worker merges adjacent calls of one script (the releases of runs
// that end together, say) into one script call of up to 256 locks. On a
// Cluster or Ring client, whose keys may live on several servers, every
// lock gets a script call of its own, still pipelined.
//
// The key layout is documented in package store.
package engine
