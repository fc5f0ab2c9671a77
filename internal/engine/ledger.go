package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// A lock's ledger is a sorted set beside the lock (LockKeys.Ledger): the
// records of its recent acquisitions, scored by their tick (or, without
// one, their start) in unix ms. An acquisition's commit adds its record
// as started; its release replaces it by the holder's final record, on
// every node, whether or not the lock still held there. A claim of parts
// adds their started records as one member, the claim's, which their
// ends leave beside their final records. The ledger keeps its newest
// records (a count and a time window) and expires by itself.

// Record is one entry of a lock's ledger, stored as JSON. Zero fields are
// left out: a record is 100 to 400 bytes.
type Record struct {
	Job   string `json:"job,omitempty"`   // the lock's name: its shard's ledger holds the records of all its locks
	Owner string `json:"owner,omitempty"` // who held the lock
	Tick  int64  `json:"tick,omitempty"`  // the occurrence claimed, unix ms
	Fence uint64 `json:"fence,omitempty"` // the acquisition's fence
	Start int64  `json:"start,omitempty"` // when the acquisition started, unix ms
	End   int64  `json:"end,omitempty"`   // when the holder released it, unix ms
	// Run, Result, Error and Try are the holder's: a scheduler's run id,
	// its result, error (at most MaxRecordError bytes) and tries.
	Run    string `json:"run,omitempty"`
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	Try    int    `json:"try,omitempty"`
	// Delay is how long after its tick the run started, in ms.
	Delay int64 `json:"delay,omitempty"`
	// Ticket is the trigger's request the acquisition took, if any.
	Ticket string `json:"ticket,omitempty"`
}

// MaxRecordError is the longest error text a record keeps, in bytes.
const MaxRecordError = 200

// RecordState is how a record reached a node's ledger.
type RecordState byte

// The prefixes the scripts put before a record's JSON.
const (
	// RecordStarted: written by the acquisition's commit; no release came
	// (yet) to this node.
	RecordStarted RecordState = 's'
	// RecordReleased: the release deleted the lock here.
	RecordReleased RecordState = 'r'
	// RecordLost: the release found the lock gone or taken here.
	RecordLost RecordState = 'l'
	// RecordMissed: a tick that ran nowhere, written by the missed-tick
	// check.
	RecordMissed RecordState = 'm'
	// RecordOperator: an operator's action on the job (a pause, a resume,
	// a trigger, a leak fix), written by the admin command or the status
	// page: Result names the action, Owner the operator, Start its time.
	RecordOperator RecordState = 'o'
)

// recordClaimed prefixes a claim's member (see lua/claim.lua): the number
// of parts it lists, "|", the number voided since, "|", the positions of
// those not claimed (from 1, comma-separated), "|", one JSON object of
// the parts' names ("jobs") and the fields their started records share,
// a newline, the parts' value, a newline and the names voided since (JSON
// strings, comma-separated). Their ends add their final records beside
// it; it is read as a started record of each part claimed and not voided.
const recordClaimed = 'c'

// recordEnds prefixes the final records of several ends written in one
// call: the positions of the lost ones (from 1, comma-separated), "|" and
// a JSON array of the records, at the highest of their scores.
const recordEnds = 'e'

// Text returns r as the scripts store it, without its state prefix.
func (r Record) Text() string {
	if len(r.Error) > MaxRecordError {
		cut := MaxRecordError
		for cut > 0 && !utf8.RuneStart(r.Error[cut]) {
			cut--
		}
		r.Error = r.Error[:cut]
	}
	b, _ := json.Marshal(r) // a struct of strings and numbers always encodes
	return string(b)
}

// LedgerWrite is a write to a lock's ledger that a commit or a release
// carries: it removes the started record Old (a Text, "" for none) and
// adds New, at Score, keeping the newest Cap records within Window of it.
// A zero LedgerWrite writes nothing.
type LedgerWrite struct {
	Old, New string
	Score    int64
	Cap      int
	Window   time.Duration
}

// Entry is one record as a node's ledger holds it.
type Entry struct {
	State  RecordState
	Record Record
	Score  int64
}

// Ledger returns up to count of the newest records of the lock's in its
// shard's ledger on the node, newest first. A member that is not a record
// is skipped. It reads the shard's ledger from its newest records, a page
// at a time, until it has count of the lock's or the ledger ends: to read
// the records of many locks, read their shards' once (ShardLedger).
func (n *Node) Ledger(ctx context.Context, k LockKeys, count int) ([]Entry, error) {
	const page = 512
	var out []Entry
	for start := int64(0); len(out) < count; start += page {
		zs, err := n.client.ZRevRangeWithScores(ctx, k.Ledger, start, start+page-1).Result()
		if err != nil {
			return nil, n.fail("ledger", k.Ledger, err)
		}
		for _, z := range zs {
			for _, e := range entriesOf(z) {
				if e.Record.Job == k.Name && len(out) < count {
					out = append(out, e)
				}
			}
		}
		if len(zs) < page {
			break
		}
	}
	return out, nil
}

// ShardLedger returns the records of a shard's ledger on the node, by lock
// name, each lock's newest first, and the highest score the ledger ever
// dropped to keep its size (0 for none, from the shard's state): the
// ledger keeps the newest records of all its locks, so it proves nothing
// at or below that score. k is any lock of the shard. A member that is not
// a record is skipped.
func (n *Node) ShardLedger(ctx context.Context, k LockKeys) (map[string][]Entry, int64, error) {
	var zs *redis.ZSliceCmd
	var floor *redis.StringCmd
	_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		zs = p.ZRevRangeWithScores(ctx, k.Ledger, 0, -1)
		floor = p.HGet(ctx, k.State, trimmedField)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, n.fail("ledger", k.Ledger, err)
	}
	if zs.Err() != nil {
		return nil, 0, n.fail("ledger", k.Ledger, zs.Err())
	}
	var dropped int64
	if f, err := floor.Result(); err == nil {
		if dropped, err = strconv.ParseInt(f, 10, 64); err != nil {
			return nil, 0, n.fail("ledger", k.State, fmt.Errorf("field %s %q: %w", trimmedField, f, err))
		}
	} else if !errors.Is(err, redis.Nil) {
		return nil, 0, n.fail("ledger", k.State, err)
	}
	out := map[string][]Entry{}
	for _, z := range zs.Val() {
		for _, e := range entriesOf(z) {
			out[e.Record.Job] = append(out[e.Record.Job], e)
		}
	}
	return out, dropped, nil
}

// trimmedField is the field of a shard's state that holds the highest
// score its ledger dropped to keep its size.
const trimmedField = "~trimmed"

// entriesOf decodes a ledger member with its score: one record, a claim's
// started records or several ends' final records; none for a member that
// is not a record.
func entriesOf(z redis.Z) []Entry {
	s, _ := z.Member.(string)
	score := int64(z.Score)
	state, rest, _ := strings.Cut(s, "|")
	switch state {
	case string(recordClaimed):
		return claimedOf(rest, score)
	case string(recordEnds):
		lost, text, _ := strings.Cut(rest, "|")
		skip := positions(lost)
		var recs []Record
		if json.Unmarshal([]byte(text), &recs) != nil {
			return nil
		}
		out := make([]Entry, 0, len(recs))
		for i, r := range recs {
			st := RecordReleased
			if skip[i+1] {
				st = RecordLost
			}
			out = append(out, Entry{State: st, Record: r, Score: score})
		}
		return out
	}
	e, err := ParseEntry(s)
	if err != nil {
		return nil
	}
	e.Score = score
	return []Entry{e}
}

// claimedOf decodes a claim's member, less its "c|" (see recordClaimed):
// a started record for each part it lists, less those not claimed or
// voided since.
func claimedOf(rest string, score int64) []Entry {
	parts := strings.SplitN(rest, "|", 4) // listed, voided, refused, the rest
	if len(parts) != 4 {
		return nil
	}
	text, after, _ := strings.Cut(parts[3], "\n")
	var voided []string
	if i := strings.LastIndexByte(after, '\n'); i >= 0 && after[i+1:] != "" {
		if json.Unmarshal([]byte("["+after[i+1:]+"]"), &voided) != nil {
			return nil
		}
	}
	var c struct {
		Jobs []string `json:"jobs"`
		Record
	}
	if json.Unmarshal([]byte(text), &c) != nil {
		return nil
	}
	refused := positions(parts[2])
	var out []Entry
	for i, job := range c.Jobs {
		if !refused[i+1] && !slices.Contains(voided, job) {
			c.Record.Job = job
			out = append(out, Entry{State: RecordStarted, Record: c.Record, Score: score})
		}
	}
	return out
}

// positions returns the positions (from 1) of a comma-separated list.
func positions(list string) map[int]bool {
	out := map[int]bool{}
	for p := range strings.SplitSeq(list, ",") {
		if n, err := strconv.Atoi(p); err == nil {
			out[n] = true
		}
	}
	return out
}

// ParseEntry decodes a ledger member: a state prefix, "|" and a Record's
// JSON.
func ParseEntry(s string) (Entry, error) {
	state, text, ok := strings.Cut(s, "|")
	if !ok || len(state) != 1 || !strings.Contains("srlmo", state) {
		return Entry{}, fmt.Errorf("redcron: ledger member %.40q: no state prefix", s)
	}
	var e Entry
	e.State = RecordState(state[0])
	if err := json.Unmarshal([]byte(text), &e.Record); err != nil {
		return Entry{}, fmt.Errorf("redcron: ledger member %.40q: %w", s, err)
	}
	return e, nil
}

// addMissed adds a record to a shard's ledger (KEYS[1]) at a score
// (ARGV[1]), drops its records older than ARGV[4] ms before that score,
// and gives the ledger a TTL of ARGV[4] ms if it has none (the next
// commit keeps its size). It notes the lock (ARGV[5]) in the shard's state
// (KEYS[2], field "j|<name>"), so that the leak scan lists it as a job
// with a history; a state without a TTL gets ARGV[4] ms.
var addMissed = redis.NewScript(`
local key, score, window = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[4])
redis.call("ZADD", key, score, ARGV[2])
if not (type(redis.pcall("HSETNX", KEYS[2], "j|" .. ARGV[5], "1")) == "table") and redis.call("PTTL", KEYS[2]) < 0 then
  redis.call("PEXPIRE", KEYS[2], window)
end
redis.call("ZREMRANGEBYSCORE", key, "-inf", "(" .. (score - window))
if redis.call("PTTL", key) < 0 then
  redis.call("PEXPIRE", key, window)
end
return 1`)

// AddMissed adds r to the lock's ledger as a missed tick (RecordMissed),
// at its tick, keeping the ledger's newest capacity records within window;
// a ledger that did not exist gets a TTL of window.
func (n *Node) AddMissed(ctx context.Context, k LockKeys, r Record, capacity int, window time.Duration) error {
	return n.addRecord(ctx, k, RecordMissed, r, r.Tick, capacity, window)
}

// AddOperator adds r to the lock's ledger as an operator's action
// (RecordOperator), at its Start, keeping the ledger's newest capacity
// records within window; a ledger that did not exist gets a TTL of window.
func (n *Node) AddOperator(ctx context.Context, k LockKeys, r Record, capacity int, window time.Duration) error {
	return n.addRecord(ctx, k, RecordOperator, r, r.Start, capacity, window)
}

// addRecord adds r to the lock's ledger in state, at score.
func (n *Node) addRecord(ctx context.Context, k LockKeys, state RecordState, r Record, score int64, capacity int, window time.Duration) error {
	r.Job = k.Name
	member := string(state) + "|" + r.Text()
	err := addMissed.Run(ctx, n.client, []string{k.Ledger, k.State}, score, member, capacity, millis(window), k.Name).Err()
	if err != nil {
		return n.fail("ledger", k.Ledger, err)
	}
	return nil
}
