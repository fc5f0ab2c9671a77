package engine

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// A trigger is a request, placed on the nodes by anyone (the admin
// command), that one replica run a job once. The request is a ticket in
// the job's trigger key (LockKeys.Trigger), and the job's name in the set
// of pending triggers (Keyspace.Triggers), where replicas look for them.
// The replica that runs it takes the ticket with its lease's commit
// (CommitRequest.Ticket): on a majority, so no other replica can.

// PlaceTrigger sets the lock's trigger key to ticket for ttl and adds the
// name to the set of pending triggers, whose TTL it extends to ttl: names
// are not removed from it one by one (a removal could race with a new
// request), the set expires ttl after the last request.
func (n *Node) PlaceTrigger(ctx context.Context, ks Keyspace, k LockKeys, ticket string, ttl time.Duration) error {
	_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k.Trigger, ticket, ttl)
		p.SAdd(ctx, ks.Triggers(), k.Name)
		p.PExpire(ctx, ks.Triggers(), ttl)
		return nil
	})
	if err != nil {
		return n.fail("trigger", k.Trigger, err)
	}
	return nil
}

// PendingTriggers returns the names in the set of pending triggers.
func (n *Node) PendingTriggers(ctx context.Context, ks Keyspace) ([]string, error) {
	names, err := n.client.SMembers(ctx, ks.Triggers()).Result()
	if err != nil {
		return nil, n.fail("triggers", ks.Triggers(), err)
	}
	return names, nil
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
