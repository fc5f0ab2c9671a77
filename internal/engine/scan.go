package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyInfo is one key found by Scan.
type KeyInfo struct {
	Key  string
	Type string // Redis type: string, hash, ...; "none" if it vanished meanwhile
	// TTL is the remaining time to live; -1 when the key has no expiry.
	TTL time.Duration
	// Value is the value of a string key; empty for other types.
	Value string
	// Fields are the fields of a hash key; nil for other types.
	Fields map[string]string
}

// KeyKind says which of the library's keys a key is.
type KeyKind int

// The kinds of keys under a prefix.
const (
	KindForeign   KeyKind = iota // under the prefix, but not a key the library writes
	KindLock                     // p:{s<shard>}:<name>:lock
	KindState                    // p:{s<shard>}:state
	KindHeartbeat                // p:hb:<owner>
	KindScanTurn                 // p:scan
	KindPause                    // p:{s<shard>}:<name>:paused
	KindLedger                   // p:{s<shard>}:ledger
	KindTrigger                  // p:{s<shard>}:<name>:trigger
	KindTriggers                 // p:triggers
	KindJobTable                 // p:jobs:<digest>
	KindReplicas                 // p:replicas
	KindTurn                     // p:{s<shard>}:<name>:turn
)

// String returns the kind's name.
func (k KeyKind) String() string {
	switch k {
	case KindLock:
		return "lock"
	case KindState:
		return "state"
	case KindHeartbeat:
		return "heartbeat"
	case KindScanTurn:
		return "scan_turn"
	case KindPause:
		return "paused"
	case KindLedger:
		return "ledger"
	case KindTrigger:
		return "trigger"
	case KindTriggers:
		return "triggers"
	case KindJobTable:
		return "job_table"
	case KindReplicas:
		return "replicas"
	case KindTurn:
		return "turn"
	}
	return "foreign"
}

// Parse says which of the keyspace's keys key is, and returns the lock
// name (for locks, pauses, triggers and turns), the shard's tag ("s12", for
// states and ledgers) or the owner (for heartbeats). A lock's key whose
// name is not of its shard is foreign.
func (k Keyspace) Parse(key string) (KeyKind, string) {
	rest, ok := strings.CutPrefix(key, k.prefix+":")
	if !ok {
		return KindForeign, ""
	}
	switch rest {
	case "scan":
		return KindScanTurn, ""
	case "triggers":
		return KindTriggers, ""
	case "replicas":
		return KindReplicas, ""
	}
	if owner, ok := strings.CutPrefix(rest, "hb:"); ok {
		return KindHeartbeat, owner
	}
	if digest, ok := strings.CutPrefix(rest, "jobs:"); ok {
		return KindJobTable, digest
	}
	tag, rest, ok := strings.Cut(strings.TrimPrefix(rest, "{"), "}:")
	shard, err := strconv.Atoi(strings.TrimPrefix(tag, "s"))
	if !ok || !strings.HasPrefix(key, k.prefix+":{s") || err != nil || shard < 0 || shard >= Shards || tag != "s"+strconv.Itoa(shard) {
		return KindForeign, ""
	}
	switch rest {
	case "state":
		return KindState, tag
	case "ledger":
		return KindLedger, tag
	}
	name, suffix, ok := cutLast(rest, ":")
	if !ok || CheckName(name) != nil || ShardOf(name) != shard {
		return KindForeign, ""
	}
	switch suffix {
	case "lock":
		return KindLock, name
	case "paused":
		return KindPause, name
	case "trigger":
		return KindTrigger, name
	case "turn":
		return KindTurn, name
	}
	return KindForeign, name
}

// scanBatch is the COUNT hint of SCAN and the size of the pipelines that
// read the keys it returns.
const scanBatch = 256

// Scan iterates over the keys matching pattern with SCAN (never KEYS; on
// a Cluster client, on every master; on a Ring, on every shard) and calls
// fn with each key's type, TTL and value, from one goroutine at a time.
// Keys are read in pipelined batches; a key that changes between SCAN and
// the read is reported as read. fn's error stops the scan and is
// returned.
func (n *Node) Scan(ctx context.Context, pattern string, fn func(KeyInfo) error) error {
	var mu sync.Mutex // the servers of a Cluster or Ring are scanned at once
	call := func(info KeyInfo) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(info)
	}
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, scanBatch).Result()
			if err != nil {
				return n.fail("scan", pattern, err)
			}
			infos, err := n.read(ctx, c, keys)
			if err != nil {
				return err
			}
			for _, info := range infos {
				if err := call(info); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	switch c := n.client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, n.client)
}

// read fetches the type, TTL and value of keys in two pipelines.
func (n *Node) read(ctx context.Context, c redis.UniversalClient, keys []string) ([]KeyInfo, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	types := make([]*redis.StatusCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			types[i], ttls[i] = p.Type(ctx, k), p.PTTL(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, n.fail("scan", keys[0], err)
	}
	infos := make([]KeyInfo, len(keys))
	strs := make([]*redis.StringCmd, len(keys))
	hashes := make([]*redis.MapStringStringCmd, len(keys))
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			infos[i] = KeyInfo{Key: k, Type: types[i].Val(), TTL: ttls[i].Val()}
			if infos[i].TTL < 0 && infos[i].TTL != -2 {
				infos[i].TTL = -1
			}
			switch infos[i].Type {
			case "string":
				strs[i] = p.Get(ctx, k)
			case "hash":
				hashes[i] = p.HGetAll(ctx, k)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) && !ServerError(err) {
		return nil, n.fail("scan", keys[0], err)
	}
	for i := range infos {
		if strs[i] != nil {
			infos[i].Value = strs[i].Val()
		}
		if hashes[i] != nil {
			infos[i].Fields = hashes[i].Val()
		}
	}
	return infos, nil
}
