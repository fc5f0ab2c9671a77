// Package store holds redcron's Redis nodes and the storage side of
// fencing.
//
// A Node is one independent Redis master over a go-redis client you
// configure; mutex.New runs the Redlock algorithm over several of them.
// FencedSet and FencedGet let a job's writes to a Redis store carry the
// run's fencing token, so that a run whose lease ended cannot overwrite a
// newer run's data.
//
// Key layout on the lock's nodes, for a prefix p (default "redcron"), a
// lock name n and its shard s (one of 64, by a hash of n):
//
//	p:{ss}:n:lock     the lock (a string holding the owner's value, with a TTL)
//	p:{ss}:n:paused   the lock's pause (a string naming who paused it, no TTL)
//	p:{ss}:n:trigger  a trigger's request to run the job (a string, with a TTL)
//	p:{ss}:state      the shard's state (a hash: each lock's fence counter
//	                  "f|n", occurrence mark "m|n" and trigger taken "t|n";
//	                  "r|n" while a tick claimed in bulk runs, see docs/shards.md)
//	p:{ss}:ledger     the shard's ledger (a sorted set of its locks' records)
//	p:hb:<owner>      an owner's heartbeat (a string with a TTL: a small JSON
//	                  document of its version, job-table digest and clock offset)
//
// The braces are a Redis Cluster hash tag ({s12} for shard 12): every key
// of a shard lives in one slot, so one script acts on all of a shard's
// locks at once, reading and writing their states and records with a few
// commands whatever their number.
package store
