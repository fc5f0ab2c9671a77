package engine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A trigger is a request, placed on the nodes by anyone (the admin
// command), that one replica run a job once. The request is a ticket in
// the job's trigger key (LockKeys.Trigger), and the job's name in the set
// of pending triggers (Keyspace.Triggers), where replicas look for them.
// The replica that runs it takes the ticket with its lease's commit
// (CommitRequest.Ticket): on a majority, so no other replica can.

// growTTL sets a key's TTL to ARGV[1] ms unless it already lives longer;
// sent with EVAL, in a pipeline (a tiny script).
const growTTL = `
if redis.call("PTTL", KEYS[1]) < tonumber(ARGV[1]) then
  return redis.call("PEXPIRE", KEYS[1], ARGV[1])
end
return 0`

// PlaceTrigger sets the lock's trigger key to ticket for ttl and adds the
// name to the set of pending triggers, whose TTL it extends to ttl if it
// was shorter: names are not removed from it one by one (a removal could
// race with a new request), the set expires with its longest request.
func (n *Node) PlaceTrigger(ctx context.Context, ks Keyspace, k LockKeys, ticket string, ttl time.Duration) error {
	_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k.Trigger, ticket, ttl)
		p.SAdd(ctx, ks.Triggers(), k.Name)
		p.Eval(ctx, growTTL, []string{ks.Triggers()}, millis(ttl))
		return nil
	})
	if err != nil {
		return n.fail("trigger", k.Trigger, err)
	}
	return nil
}

// Tickets returns the pending triggers' tickets on the node, by lock
// name: the names in the set of pending triggers whose trigger key holds
// a ticket, read in one round trip after the set.
func (n *Node) Tickets(ctx context.Context, ks Keyspace) (map[string]string, error) {
	names, err := n.client.SMembers(ctx, ks.Triggers()).Result()
	if err != nil {
		return nil, n.fail("triggers", ks.Triggers(), err)
	}
	cmds := make(map[string]*redis.StringCmd, len(names))
	_, err = n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, name := range names {
			if lk, err := ks.Lock(name); err == nil {
				cmds[name] = p.Get(ctx, lk.Trigger)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, n.fail("triggers", ks.Triggers(), err)
	}
	out := make(map[string]string, len(cmds))
	for name, c := range cmds {
		if t, err := c.Result(); err == nil && t != "" {
			out[name] = t
		}
	}
	return out, nil
}

// WithdrawTrigger deletes the lock's trigger key while it holds ticket, and
// reports whether it did: a request that no replica took in time.
func (n *Node) WithdrawTrigger(ctx context.Context, k LockKeys, ticket string) (bool, error) {
	return n.DeleteIfValue(ctx, k.Trigger, ticket)
}

// Ticket returns the ticket in the lock's trigger key, "" if none.
func (n *Node) Ticket(ctx context.Context, k LockKeys) (string, error) {
	t, err := n.client.Get(ctx, k.Trigger).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", n.fail("trigger", k.Trigger, err)
	}
	return t, nil
}

// NewTicket returns a trigger's ticket placed by who at at:
// "who|<unix ms>|<random>". Who must not contain "|".
func NewTicket(who string, at time.Time) string {
	return who + "|" + strconv.FormatInt(at.UnixMilli(), 10) + "|" + NewToken()[:8]
}

// TicketTime returns when a ticket made by NewTicket was placed, and
// whether it could be read.
func TicketTime(ticket string) (time.Time, bool) {
	rest, _, ok := cutLast(ticket, "|")
	if !ok {
		return time.Time{}, false
	}
	_, ms, ok := cutLast(rest, "|")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(n), true
}

// cutLast slices s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
