package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The answers a node gives to a claim besides Acquire's.
const (
	// FenceAhead: the part's fence counter is at or above the fence asked
	// for (Fence is the counter).
	FenceAhead AcquireStatus = iota + 5
	// ParentLost: the claim's right (ClaimRequest.Right), or the parent
	// its running value names, does not hold its value on the node
	// (Holder is what holds it, "" for nothing).
	ParentLost
)

// Parent is a held lock, as the nodes know it: its lock key and the value
// it holds.
type Parent struct {
	Key, Value string
}

// ClaimRequest is one part claimed on one node: an occurrence of a lock
// held as a part, without a key of its own (see lua/claim.lua), by the
// holder of Right.
type ClaimRequest struct {
	Right Parent // the lease whose holder alone claims (a shard's)
	Keys  LockKeys
	// Running is the part's running value (RunningValue): the parent it
	// lives under and its own value.
	Running    string
	Occurrence int64  // unix ms, above 0
	Fence      uint64 // the fence the part takes (0: fencing off): refused where the counter is at or above it
	// Ledger is the part's started record (its New; Old is unused).
	Ledger LedgerWrite
}

// CompareClaims orders claims by their right, shard, running value (its
// parent and value), occurrence and fence, so that those of one script
// call are together (ClaimAllAsync sorts them unless they are): a call's
// parts share them all, sent once, and only their names go one by one.
func CompareClaims(a, b ClaimRequest) int {
	return cmp.Or(strings.Compare(a.Right.Key, b.Right.Key), strings.Compare(a.Right.Value, b.Right.Value),
		strings.Compare(a.Keys.State, b.Keys.State), strings.Compare(a.Running, b.Running),
		cmp.Compare(a.Occurrence, b.Occurrence), cmp.Compare(a.Fence, b.Fence))
}

// ErrNotSingleServer is the error of a claim sent to a node whose keys may
// live on several servers (a Cluster or Ring client): a claim reads its
// parent and its parts' shard in one script.
var ErrNotSingleServer = errors.New("parts are claimed only on a single server")

// SingleServer reports whether every key of the node lives on one server
// (a plain client), so that it takes claims.
func (n *Node) SingleServer() bool { return n.singleServer() }

// ClaimAllAsync claims parts, any number, with their answers passed to
// done in the order of reqs, as Acquire's (Status Acquired when claimed;
// FenceAhead, and ParentLost for a right not held, besides), each with the
// server's run id and uptime. The parts of one right, shard, running value,
// occurrence and fence go in one script call (up to 256), all calls in one
// round trip: a claimer that gives the parts of one claim one value
// (several parts can share one: each is a field of its own) sends little
// more than their names. A claim raises the state's TTL to stateTTL.
//
// ends are parts to end on the way, each in the call of its shard's
// claims, before them; done's ended says which were answered (an end of a
// shard without a claim here, or in a call that failed, is not: end it
// with FreeAllAsync).
func (n *Node) ClaimAllAsync(ctx context.Context, reqs []ClaimRequest, ends []FreeRequest, stateTTL time.Duration, done func(rs []AcquireResult, ended []bool)) {
	out := make([]AcquireResult, len(reqs))
	ended := make([]bool, len(ends))
	if !n.singleServer() {
		for i := range out {
			out[i].Err = n.fail("claim", reqs[i].Keys.Lock, ErrNotSingleServer)
		}
		done(out, ended)
		return
	}
	endsOf := map[string][]int{} // by state
	for k, e := range ends {
		endsOf[e.Keys.State] = append(endsOf[e.Keys.State], k)
	}
	// A call's parts share their right, shard and parent (sent once); the
	// parents are read from the running values.
	parents, values := make([]Parent, len(reqs)), make([]string, len(reqs))
	at := make([]int, 0, len(reqs))
	for i, r := range reqs {
		var ok bool
		if parents[i], values[i], ok = ParseRunning(r.Running); !ok {
			out[i].Err = n.fail("claim", r.Keys.Lock, fmt.Errorf("running value %.60q names no parent", r.Running))
			continue
		}
		at = append(at, i)
	}
	if !slices.IsSortedFunc(reqs, CompareClaims) { // a claimer sorts them once for all its nodes
		slices.SortStableFunc(at, func(a, b int) int { return CompareClaims(reqs[a], reqs[b]) })
	}
	var calls []*call
	var left atomic.Int32 // calls not answered
	finish := func() {
		if left.Add(-1) == 0 {
			done(out, ended)
		}
	}
	for lo := 0; lo < len(at); {
		hi := lo + 1
		for hi < len(at) && hi-lo < maxItems && CompareClaims(reqs[at[hi]], reqs[at[lo]]) == 0 { // one call's group
			hi++
		}
		state := reqs[at[lo]].Keys.State
		mine := endsOf[state]
		delete(endsOf, state)
		calls = append(calls, n.claimCall(ctx, reqs, values[at[lo]], parents[at[lo]], at[lo:hi], ends, mine, stateTTL, out, ended, finish))
		lo = hi
	}
	if len(calls) == 0 {
		done(out, ended)
		return
	}
	left.Store(int32(len(calls)))
	n.batch.submit(mayBlock(ctx), calls...)
}

// claimCall returns the script call claiming the parts reqs[i] for i in
// part, all of one right, shard, running value (parent and value),
// occurrence and fence, which puts their answers in out and then calls
// finish.
func (n *Node) claimCall(ctx context.Context, reqs []ClaimRequest, value string, parent Parent, part []int, ends []FreeRequest, mine []int,
	stateTTL time.Duration, out []AcquireResult, ended []bool, finish func()) *call {
	first := reqs[part[0]]
	keys := []string{first.Right.Key, first.Keys.State, first.Keys.Ledger, parent.Key}
	ledgerCap, window := first.Ledger.Cap, first.Ledger.Window
	for _, k := range mine {
		ledgerCap, window = max(ledgerCap, ends[k].Ledger.Cap), max(window, ends[k].Ledger.Window)
	}
	distinct, finals, finalScore, endArgs := endClaimArgs(ends, mine)
	_, rest := startedArg(first.Keys.Name, first.Ledger.New)
	partArgs, claimText := claimParts(reqs, part, rest)
	args := make([]any, 0, 14+len(distinct)+len(endArgs)+len(partArgs))
	args = append(args, "1", first.Right.Value, millis(stateTTL), ledgerCap, millis(window), len(mine), parent.Value,
		value, first.Occurrence, first.Fence, claimText, len(distinct))
	args = append(args, distinct...)
	args = append(args, finals, finalScore)
	args = append(args, endArgs...)
	args = append(args, partArgs...)
	return &call{ctx: ctx, script: claimScript, keys: keys, args: args, items: len(part), done: func(cmd *redis.Cmd) {
		res, err := claimScript.answer(cmd, len(part))
		var info *Info
		var infoErr error
		if err == nil {
			info, infoErr, err = parseServer(res[0], res[1])
		}
		for _, k := range mine {
			ended[k] = err == nil
		}
		for x, i := range part {
			var rep AcquireReply
			ierr := err
			if ierr == nil {
				rep, ierr = parseAcquire(res[2+3*x:][:3])
			}
			if ierr != nil {
				out[i].Err = n.fail("claim", reqs[i].Keys.Lock, ierr)
				continue
			}
			rep.Info, rep.InfoErr = info, infoErr
			out[i].Reply = rep
		}
		finish()
	}}
}

// claimParts returns the arguments of the parts reqs[i], i in part, of a
// claim call (see lua/claim.lua): each one's name and m; and the claim's
// record, listing those whose started records share rest ("" for none).
func claimParts(reqs []ClaimRequest, part []int, rest string) ([]any, string) {
	var names []string // the parts listed in the claim's record, their names as JSON
	partArgs := make([]any, 0, 2*len(part))
	for _, i := range part {
		r := reqs[i]
		m, mrest := startedArg(r.Keys.Name, r.Ledger.New)
		switch {
		case r.Ledger.New == "":
			m = "-"
		case rest != "" && mrest == rest && (m == "" || strings.HasPrefix(m, `"`)):
			if m == "" {
				m = `"` + r.Keys.Name + `"`
			}
			names, m = append(names, m), ""
		default: // not of the claim's records: a member of its own
			m = member(RecordStarted, r.Ledger.New)
		}
		partArgs = append(partArgs, r.Keys.Name, m)
	}
	if len(names) == 0 {
		return partArgs, ""
	}
	return partArgs, `{"jobs":[` + strings.Join(names, ",") + "]," + rest
}

// FreeRequest ends one part on one node (see lua/free.lua).
type FreeRequest struct {
	Keys    LockKeys
	Running string      // the part's running value, as its claim set it
	Ledger  LedgerWrite // the part's final record, replacing its started one
	// Occurrence, for a claim given up (never run), is its occurrence
	// (unix ms): where its claim set the mark, the mark goes back below
	// it, so that the tick can be claimed again. 0 for a part won.
	Occurrence int64
}

// endClaimArgs returns the arguments of the ends ends[k], k in mine, of a
// claim call (see lua/claim.lua): their running values, each sent once, as
// the parts of one claim share it; their final records, a JSON array, and
// its score (the highest of theirs); and then each end's own arguments.
func endClaimArgs(ends []FreeRequest, mine []int) (distinct []any, finals string, score int64, endArgs []any) {
	claims := map[string]int{}
	endArgs = make([]any, 0, 4*len(mine))
	var recs []string
	size := 2 // the final records' JSON array: its brackets and commas
	for _, k := range mine {
		e := ends[k]
		own, _ := ownStarted(e.Keys.Name, e.Ledger.Old)
		if _, ok := claims[e.Running]; !ok {
			distinct = append(distinct, e.Running)
			claims[e.Running] = len(claims) + 1
		}
		pos := 0
		if e.Ledger.New != "" {
			recs = append(recs, e.Ledger.New)
			pos, score, size = len(recs), max(score, e.Ledger.Score), size+len(e.Ledger.New)+1
		}
		endArgs = append(endArgs, e.Keys.Name, claims[e.Running], member(RecordStarted, own), pos)
	}
	if len(recs) > 0 {
		var b strings.Builder // one allocation: the records of a call's ends are most of its bytes
		b.Grow(size)
		b.WriteByte('[')
		for j, rec := range recs {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(rec)
		}
		b.WriteByte(']')
		finals = b.String()
	}
	return distinct, finals, score, endArgs
}

// ownStarted returns the text of the started record that a part's end
// removes from the ledger, and whether that record is its claim's member
// instead (see lua/claim.lua: a text that opens with the part's name,
// see startedArg), with the part's name as JSON: the claim's member stays
// beside the final record (the ledger's readers take the final one), and
// loses the name when the claim is given up (lua/free.lua).
func ownStarted(name, text string) (own, inClaim string) {
	m, _ := startedArg(name, text)
	switch {
	case m == "":
		return "", `"` + name + `"`
	case strings.HasPrefix(m, `"`):
		return "", m
	}
	return text, ""
}

// freeOld returns the old record argument of a part's end in free.lua:
// the text of its started record when that is a member of its own, "" when
// its claim's member lists it, and for a claim given up, "x|", its name as
// JSON, a newline and the text, which voids the record (the claim never
// ran).
func freeOld(name, text string, givenUp bool) string {
	own, inClaim := ownStarted(name, text)
	if inClaim != "" && givenUp {
		return "x|" + inClaim + "\n" + text
	}
	return own
}

// startedArg returns how a claim call sends the started record text of
// the part called name (see lua/claim.lua): the rest its claim's records
// share and m, "" for the name as it is, the escaped name, "-" for no
// record, or the whole member ("s|" .. text, rest "") for a text that does
// not open with the name.
func startedArg(name, text string) (m, rest string) {
	if text == "" {
		return "-", ""
	}
	esc, after, ok := strings.Cut(text, ",")
	if body, isJob := strings.CutPrefix(esc, `{"job":`); isJob && ok {
		if len(body) == len(name)+2 && body[0] == '"' && body[len(body)-1] == '"' && body[1:len(body)-1] == name &&
			!strings.ContainsAny(name, `"\`) { // the name as JSON, unescaped: no need to decode it
			return "", after
		}
		var got string
		if json.Unmarshal([]byte(body), &got) == nil && got == name && strings.HasPrefix(body, `"`) && strings.HasSuffix(body, `"`) {
			if body == `"`+name+`"` {
				return "", after
			}
			return body, after
		}
	}
	return member(RecordStarted, text), ""
}

// member returns a record's ledger member in state (its prefix and text),
// "" for no record.
func member(state RecordState, text string) string {
	if text == "" {
		return ""
	}
	return string(state) + "|" + text
}

// RunningValue returns the running value of a part of value held under
// parent, for ClaimRequest.Running and FreeRequest.Running.
func RunningValue(parent Parent, value string) string {
	return parent.Key + "\n" + parent.Value + "\n" + value
}

// ParseRunning splits a running value (RunningValue) into the parent it
// names and the part's value, and reports whether it is one.
func ParseRunning(running string) (Parent, string, bool) {
	key, rest, ok1 := strings.Cut(running, "\n")
	value, part, ok2 := strings.Cut(rest, "\n")
	return Parent{Key: key, Value: value}, part, ok1 && ok2
}

// RunningField returns the lock name of a running value's field of a
// shard's state ("r|<name>"), and whether it is one.
func RunningField(field string) (string, bool) {
	name, ok := strings.CutPrefix(field, "r|")
	return name, ok && CheckName(name) == nil
}

// FreeAllAsync ends parts, any number: each part's running value is
// removed where it is the one given, and its started record replaced by
// its final one. done gets whether each was still running (CommitResult's
// Held), in the order of reqs. Frees are sent even while the node backs
// off.
func (n *Node) FreeAllAsync(ctx context.Context, reqs []FreeRequest, done func([]CommitResult)) {
	out := make([]CommitResult, len(reqs))
	n.submitAll(ctx, freeScript, len(reqs), func(lo, hi int) ([]string, []any) {
		keys := make([]string, 0, 2*(hi-lo))
		args := make([]any, 1, 1+8*(hi-lo))
		args[0] = ""
		for _, r := range reqs[lo:hi] {
			w := r.Ledger
			keys = append(keys, r.Keys.Ledger, r.Keys.State)
			args = append(args, r.Keys.Name, r.Running, freeOld(r.Keys.Name, w.Old, r.Occurrence != 0), w.New, w.Score, w.Cap, millis(w.Window), r.Occurrence)
		}
		return keys, args
	}, n.heldAnswers(out, "free", func(i int) string { return reqs[i].Keys.State }), func() { done(out) })
}
