package engine

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// maxItems is the most locks one script call of AcquireAll or CommitAll
// carries: Redis runs a script to its end before anything else, so a
// large batch is split into calls of this size, all sent in one pipeline.
const maxItems = 256

// submitAll queues count items as script calls of s, each carrying the
// items lo..hi that encode turns into keys and arguments, and passes each
// call's answer (checked against the script's layout) or error to decode. done is called once, after every decode. A
// client that may spread keys over several servers (Cluster, Ring) gets one
// item per call, since a script's keys must live on one server.
func (n *Node) submitAll(ctx context.Context, s *script, count int, encode func(lo, hi int) ([]string, []any), decode func(lo, hi int, res []any, err error), done func()) {
	n.submitPlain(ctx, s, count, nil, encode, decode, done)
}

// submitPlain is submitAll, with plain, if not nil, sending a call of one
// lock as plain commands (see plainAcquire).
func (n *Node) submitPlain(ctx context.Context, s *script, count int, plain *plainAcquire, encode func(lo, hi int) ([]string, []any), decode func(lo, hi int, res []any, err error), done func()) {
	if count == 0 {
		done()
		return
	}
	size := 1
	if n.singleServer() {
		size = maxItems
	}
	var left atomic.Int32
	left.Store(int32((count + size - 1) / size))
	calls := make([]*call, 0, (count+size-1)/size)
	for lo := 0; lo < count; lo += size {
		hi := min(lo+size, count)
		keys, args := encode(lo, hi)
		calls = append(calls, &call{ctx: ctx, script: s, keys: keys, args: args, items: hi - lo, cleanup: s == freeScript, plain: plain, done: func(cmd *redis.Cmd) {
			res, err := s.answer(cmd, hi-lo)
			decode(lo, hi, res, err)
			if left.Add(-1) == 0 {
				done()
			}
		}})
	}
	n.batch.submit(mayBlock(ctx), calls...) // in one pipeline, unless there are more than maxBatch
}

// singleServer reports whether every key of the node lives on one server,
// so that one script call may act on any of them: not on a Cluster or
// Ring client, or a client of a kind the node does not know.
func (n *Node) singleServer() bool {
	_, ok := n.client.(*redis.Client)
	return ok
}

// mergeCalls returns batch with every run of adjacent calls of the same
// script and leading argument combined into calls of up to maxItems locks
// each: the releases (or extensions) of many locks that end at the same
// moment cost one script call. Within a run, the calls are ordered by
// their shard (stably: the calls of one lock keep their order), so that
// the locks of a shard share a call, read and written together. A
// combined call splits its answer among the calls it carries.
func mergeCalls(batch []*call) []*call {
	out := make([]*call, 0, len(batch))
	for i := 0; i < len(batch); {
		first, j := batch[i], i+1
		if first.script == claimScript || first.plain != nil { // a claim's keys and arguments open with its parent's; plain commands are no script call
			out = append(out, first)
			i++
			continue
		}
		for j < len(batch) && batch[j].script == first.script && batch[j].args[0] == first.args[0] && batch[j].plain == nil {
			j++
		}
		run := batch[i:j]
		if first.script != extendScript { // every lock's second key is its shard's state
			slices.SortStableFunc(run, func(a, b *call) int { return strings.Compare(a.keys[1], b.keys[1]) })
		}
		for len(run) > 0 {
			k, items := 1, run[0].items
			for k < len(run) && items+run[k].items <= maxItems {
				items += run[k].items
				k++
			}
			if k == 1 {
				out = append(out, run[0])
			} else {
				out = append(out, combine(run[:k], items))
			}
			run = run[k:]
		}
		i = j
	}
	return out
}

// combine returns one call carrying the locks of parts, all calls of one
// script with one leading argument.
func combine(parts []*call, items int) *call {
	s := parts[0].script
	keys := make([]string, 0, len(parts)*len(parts[0].keys))
	args := make([]any, 1, 1+len(parts)*(len(parts[0].args)-1))
	args[0] = parts[0].args[0]
	for _, p := range parts {
		keys = append(keys, p.keys...)
		args = append(args, p.args[1:]...)
	}
	return &call{ctx: parts[0].ctx, script: s, keys: keys, args: args, items: items, done: func(cmd *redis.Cmd) {
		res, err := s.answer(cmd, items)
		off := s.head
		for _, p := range parts {
			pc := redis.NewCmd(p.ctx)
			if err != nil {
				pc.SetErr(err)
			} else {
				n := p.items * s.width
				pc.SetVal(append(slices.Clip(res[:s.head]), res[off:off+n]...))
				off += n
			}
			p.done(pc)
		}
	}}
}

// replyError is an error a script reported for one of the locks it was
// given, such as WRONGTYPE: a server error, like the client's own error
// replies.
type replyError string

func (e replyError) Error() string { return string(e) }

// RedisError marks replyError as a server error (redis.Error).
func (replyError) RedisError() {}
