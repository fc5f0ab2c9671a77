// Package store is the Redis layer of redcron: one Node per independent
// Redis master, the key layout, the Lua scripts that act on one node
// atomically, the lock value format, and SCAN-based listing of the
// library's keys.
//
// A Node never retries and never decides anything about quorums: that is
// the job of package mutex, which runs the Redlock algorithm over several
// Nodes. Scripts are embedded in the binary and sent with EVALSHA, falling
// back to EVAL when the server does not have them cached yet.
//
// Key layout, for a prefix p and a lock name n:
//
//	p:{n}:lock    the lock (a string holding the owner's value, with a TTL)
//	p:{n}:state   the lock's state (a hash: fence counter and occurrence mark)
//	p:hb:<owner>  an owner's heartbeat (a string with a TTL)
//
// The braces are a Redis Cluster hash tag, so both keys of a lock live in
// the same slot and one script can touch both.
package store
