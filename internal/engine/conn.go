package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The restart check (mutex's servers.go) needs each acquisition's answer
// to say which server gave it (its run id) and since when that server is
// up: the acquire and claim scripts can read INFO server, but it costs a
// server more than the rest of an acquisition. A server's restart closes
// its connections, and an answer on a connection comes from the server
// that accepted it; so on a single-server client (*redis.Client) a node's
// calls go on one connection of the client's pool (go-redis's Conn, which
// never dials again once its connection failed), the sender's (see
// batcher): its first pipeline reads INFO, and the later answers on it
// carry what that INFO said, the uptime advanced by the time since. The
// connection is given up after any error, and when the node has been idle
// for connIdle (back to the pool, which checks it before it hands it out
// again), so that the next pipeline goes on another one and reads INFO
// again: a burst of calls reads it once per infoMaxAge. On a client whose
// pool holds a single connection (it stays the pool's), and on a Cluster
// or Ring client (whose keys live on several servers), every acquisition
// reads INFO as asked.
//
// This relies on an answer on a connection coming from the server that
// accepted it, which holds for a connection to the server itself, not
// through a proxy that forwards one client connection to another server
// (a restarted backend, a failover) without closing it: behind such a
// proxy, a busy connection reads INFO again every infoMaxAge, so that the
// change shows in the answers at most infoMaxAge (and a round trip) after
// the new server's first answer, not at once.

// serverRead is a server's INFO as read on the node's connection.
type serverRead struct {
	info Info
	at   time.Time // when it was read, with a monotonic reading
}

// infoMaxAge is how long the answers on a node's connection carry the
// server's INFO as read on it before a pipeline reads it again: it bounds
// how long a server changed behind a proxy goes unseen (see above), at
// the cost of one INFO in a pipeline every infoMaxAge.
const infoMaxAge = 100 * time.Millisecond

// connIdle is how long the node keeps its connection without a call:
// the pool checks a connection's health when it hands it out, and a
// kept one is not checked, so that a server restarted meanwhile (or a
// connection cut) would fail the next call. Calls back to back keep it.
const connIdle = 10 * time.Millisecond

// idled notes that the node's sender stopped sending (a caller done, or
// the worker waiting for calls), and arms closeIdle. Called with b.mu
// held.
func (b *batcher) idled() {
	b.lastSent = time.Now()
	if !b.closing && b.conn != nil {
		b.closing = true
		time.AfterFunc(connIdle, b.closeIdle)
	}
}

// closeIdle closes the node's connection once no sender has used it for
// connIdle, or checks again later.
func (b *batcher) closeIdle() {
	b.mu.Lock()
	if b.active && !b.parked { // the sender arms it again when done
		b.closing = false
		b.mu.Unlock()
		return
	}
	if left := connIdle - time.Since(b.lastSent); left > 0 {
		time.AfterFunc(left, b.closeIdle)
		b.mu.Unlock()
		return
	}
	b.closing = false
	conn := b.detach()
	b.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

// detach returns the node's connection, forgotten with its server, for
// the caller to close. Called by the sender, or with b.mu held and no
// sender active.
func (b *batcher) detach() *redis.Conn {
	conn := b.conn
	b.conn, b.server = nil, nil
	return conn
}

// askInfo lets, on a connection whose server was read (b.server), the
// acquire and claim calls of batch skip INFO: readInfo completes their
// answers; once the read is infoMaxAge old, the first of them reads it
// again. On any other client, or before the first read, they ask for it
// as their callers said.
func (b *batcher) askInfo(batch []*call) {
	if b.server == nil {
		return
	}
	stale := time.Since(b.server.at) >= infoMaxAge
	for _, c := range batch {
		if c.script.head == 2 && c.args[0] == "1" {
			if stale {
				stale = false // this one reads it again
				continue
			}
			c.args[0] = "0"
		}
	}
}

// readInfo notes the server's INFO that the answers of batch (cmds, the
// calls answered on the node's connection) carry, the latest read, and
// completes with it the answers that carry none (see askInfo). An INFO
// that cannot be read forgets the server, so that the next pipeline reads
// it again.
func (b *batcher) readInfo(batch []*call, cmds []*redis.Cmd) {
	if b.conn == nil {
		return
	}
	for i, c := range batch {
		if c.script.head != 2 {
			continue
		}
		res, err := cmds[i].Slice()
		if err != nil || len(res) < 2 {
			continue
		}
		switch uptime, runID := res[0], res[1]; {
		case uptime == "" && runID == "":
			if b.server != nil {
				res[0] = strconv.FormatInt(int64((b.server.info.Uptime+time.Since(b.server.at))/time.Second), 10)
				res[1] = b.server.info.RunID
			}
		default:
			b.server = nil
			if info, ierr, err := parseServer(uptime, runID); err == nil && ierr == nil && info != nil {
				b.server = &serverRead{info: *info, at: time.Now()}
			}
		}
	}
}

// pipeline returns a pipeline on the node's connection, made if there is
// none (single-server clients whose pool has room for it), or else on the
// client's pool. The node's first pipeline goes on the pool (see
// settled).
func (b *batcher) pipeline() redis.Pipeliner {
	if b.conn == nil {
		c, ok := b.n.client.(*redis.Client)
		if !ok || c.Options().PoolSize < 2 || !b.settled {
			return b.n.client.Pipeline()
		}
		b.conn, b.server = c.Conn(), nil
	}
	return b.conn.Pipeline()
}

// blockingKey marks a context whose calls' caller waits for them at once.
type blockingKey struct{}

// MayBlock returns ctx marked so that a node's Async calls made with it
// may be sent from the calling goroutine, before they return, when the
// node is idle and healthy: for a caller that would only wait for the
// answer (a lock on one node), which saves the worker's two hand-offs.
// The call then blocks until answered, up to its context's deadline.
func MayBlock(ctx context.Context) context.Context {
	return context.WithValue(ctx, blockingKey{}, true)
}

// mayBlock reports whether ctx was marked by MayBlock.
func mayBlock(ctx context.Context) bool {
	v, _ := ctx.Value(blockingKey{}).(bool)
	return v
}
