package store

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// maxItems is the most locks one script call of AcquireAll or CommitAll
// carries: Redis runs a script to its end before anything else, so a
// large batch is split into calls of this size, all sent in one pipeline.
const maxItems = 256

// submitAll queues count items as script calls of s, each carrying the
// items lo..hi that encode turns into keys and arguments, and passes each
// call's answer to decode. done is called once, after every decode. A
// client that may spread keys over several servers (Cluster, Ring) gets one
// item per call, since a script's keys must live on one server.
func (n *Node) submitAll(ctx context.Context, s script, count int, encode func(lo, hi int) ([]string, []any), decode func(lo, hi int, cmd *redis.Cmd), done func()) {
	if count == 0 {
		done()
		return
	}
	size := 1
	if _, single := n.client.(*redis.Client); single {
		size = maxItems
	}
	var left atomic.Int32
	left.Store(int32((count + size - 1) / size))
	calls := make([]*call, 0, (count+size-1)/size)
	for lo := 0; lo < count; lo += size {
		hi := min(lo+size, count)
		keys, args := encode(lo, hi)
		calls = append(calls, &call{ctx: ctx, script: s, keys: keys, args: args, done: func(cmd *redis.Cmd) {
			decode(lo, hi, cmd)
			if left.Add(-1) == 0 {
				done()
			}
		}})
	}
	n.batch.submit(calls...) // in one pipeline, unless there are more than maxBatch
}

// replyError is an error a script reported for one of the locks it was
// given, such as WRONGTYPE: a server error, like the client's own error
// replies.
type replyError string

func (e replyError) Error() string { return string(e) }

// RedisError marks replyError as a server error (redis.Error).
func (replyError) RedisError() {}
