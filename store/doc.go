// Package store holds redcron's Redis nodes and the storage side of
// fencing.
//
// A Node is one independent Redis master over a go-redis client you
// configure; mutex.New runs the Redlock algorithm over several of them.
// FencedSet and FencedGet let a job's writes to a Redis store carry the
// run's fencing token, so that a run whose lease ended cannot overwrite a
// newer run's data.
//
// Key layout on the lock's nodes, for a prefix p (default "redcron") and a
// lock name n:
//
//	p:{n}:lock    the lock (a string holding the owner's value, with a TTL)
//	p:{n}:state   the lock's state (a hash: fence counter and occurrence mark)
//	p:hb:<owner>  an owner's heartbeat (a string with a TTL: a small JSON
//	              document of its version, job-table digest and clock offset)
//
// The braces are a Redis Cluster hash tag, so both keys of a lock live in
// the same slot and one script can touch both.
package store
