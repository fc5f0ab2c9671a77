package engine

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultPrefix is the key prefix used when none is configured.
const DefaultPrefix = "redcron"

// MaxNameLen is the longest lock name, in bytes, that Keyspace accepts.
const MaxNameLen = 200

// Keyspace builds the Redis key names of the library under one prefix.
// The zero value is not usable; create one with NewKeyspace.
type Keyspace struct {
	prefix string
}

// Shards is the number of shards the locks' names hash to (ShardOf). A
// lock's keys and its shard's keys share one hash tag, {s<shard>}, so that
// the locks of a shard are read and written together, in one script call
// of a few commands, on one server even of a Redis Cluster. It is fixed:
// every replica of a fleet must hash a name to the same shard.
const Shards = 64

// ShardOf returns the shard of a lock name: its FNV-1a hash modulo Shards.
func ShardOf(name string) int {
	h := uint32(2166136261)
	for i := range len(name) {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return int(h % Shards)
}

// LockKeys are the keys of one lock. State and Ledger are its shard's,
// shared by every lock of the shard: the lock's fields in State are
// "f|<name>" (its fence counter), "m|<name>" (its occurrence mark) and
// "t|<name>" (the trigger's ticket its holder took); its records in Ledger
// carry its name (Record.Job).
type LockKeys struct {
	Name   string // the lock's name
	Lock   string // the lock key: a string holding the owner's value
	State  string // the shard's state hash: the locks' fences, marks and tickets
	Pause  string // present (no TTL) while the lock's occurrences are paused
	Ledger string // the shard's sorted set of the locks' records (see Record)
	// Trigger holds a trigger's request (a ticket) while no replica has
	// taken it; a commit with the ticket takes it.
	Trigger string
	// Turn holds the waiter whose turn it is to take the lock (see
	// AcquireRequest.Waiter), with a TTL.
	Turn string
}

// NewKeyspace returns the keyspace under prefix ("" means DefaultPrefix).
// A prefix must be printable, without spaces, braces, colons at either end
// or glob characters (* ? [ ] \), so that SCAN patterns built from it match
// only the library's keys.
func NewKeyspace(prefix string) (Keyspace, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := checkPrefix(prefix); err != nil {
		return Keyspace{}, err
	}
	return Keyspace{prefix: prefix}, nil
}

func checkPrefix(p string) error {
	if len(p) > MaxNameLen {
		return fmt.Errorf("redcron: key prefix %.20q...: longer than %d bytes", p, MaxNameLen)
	}
	if strings.HasPrefix(p, ":") || strings.HasSuffix(p, ":") {
		return fmt.Errorf("redcron: key prefix %q: must not start or end with ':'", p)
	}
	for _, r := range p {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune("{}*?[]\\", r) {
			return fmt.Errorf("redcron: key prefix %q: character %q not allowed", p, r)
		}
	}
	return nil
}

// Prefix returns the keyspace's prefix.
func (k Keyspace) Prefix() string { return k.prefix }

// Lock returns the keys of the lock called name. A name must be valid
// UTF-8, 1 to MaxNameLen bytes, printable, without braces (they would break
// the Cluster hash tag) and without leading or trailing white space.
func (k Keyspace) Lock(name string) (LockKeys, error) {
	if err := CheckName(name); err != nil {
		return LockKeys{}, err
	}
	tag := k.shardTag(ShardOf(name))
	return LockKeys{Name: name, Lock: tag + name + ":lock", State: tag + "state", Pause: tag + name + ":paused",
		Ledger: tag + "ledger", Trigger: tag + name + ":trigger", Turn: tag + name + ":turn"}, nil
}

// FenceField and MarkField return the fields of the lock's fence counter
// and occurrence mark in its shard's state hash (State).
func (k LockKeys) FenceField() string { return "f|" + k.Name }

// MarkField: see FenceField.
func (k LockKeys) MarkField() string { return "m|" + k.Name }

// StateField returns the lock name of a field of a shard's state hash (a
// fence, mark or ticket field, or "j|<name>": a lock with records in the
// shard's ledger), and whether it is one.
func StateField(field string) (string, bool) {
	kind, name, ok := strings.Cut(field, "|")
	if !ok || len(kind) != 1 || !strings.Contains("fmtj", kind) || CheckName(name) != nil {
		return "", false
	}
	return name, true
}

// shardTag returns the beginning of every key of shard s: the prefix and
// the shard's hash tag.
func (k Keyspace) shardTag(s int) string { return k.prefix + ":{s" + strconv.Itoa(s) + "}:" }

// ShardLedger returns the key of shard s's ledger.
func (k Keyspace) ShardLedger(s int) string { return k.shardTag(s) + "ledger" }

// Heartbeat returns the heartbeat key of owner.
func (k Keyspace) Heartbeat(owner string) string {
	return k.prefix + ":hb:" + owner
}

// ScanTurn returns the key that gives one replica at a time its turn to
// scan for leaks.
func (k Keyspace) ScanTurn() string { return k.prefix + ":scan" }

// Triggers returns the key of the set of the names of the locks that have
// a trigger's request: replicas look there for requests to take.
func (k Keyspace) Triggers() string { return k.prefix + ":triggers" }

// Replicas returns the key of the sorted set of the live replicas, each
// scored by when its presence expires (see Node.Presence).
func (k Keyspace) Replicas() string { return k.prefix + ":replicas" }

// JobTable returns the key of the job table whose digest is digest: a hash
// of each job's name to its spec and zone (see JobSpec), published by the
// replicas that run that table, for the admin command.
func (k Keyspace) JobTable(digest string) string { return k.prefix + ":jobs:" + digest }

// HeartbeatPattern returns the SCAN pattern matching every heartbeat key.
func (k Keyspace) HeartbeatPattern() string { return k.prefix + ":hb:*" }

// Pattern returns the SCAN pattern matching every key of the keyspace.
func (k Keyspace) Pattern() string { return k.prefix + ":*" }

// CheckName reports whether name is usable as a lock name, with an error
// that quotes it.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("redcron: lock name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("redcron: lock name %.20q...: longer than %d bytes", name, MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("redcron: lock name %q: not valid UTF-8", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("redcron: lock name %q: leading or trailing white space", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) && r != ' ' || r == '{' || r == '}' {
			return fmt.Errorf("redcron: lock name %q: character %q not allowed", name, r)
		}
	}
	return nil
}
