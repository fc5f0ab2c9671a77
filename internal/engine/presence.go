package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// presence adds ARGV[1] to the sorted set KEYS[1], scored by the node's
// time (ms) plus ARGV[2] ms, removes the members whose score has passed,
// keeps the set for ARGV[2] ms, and returns the members left.
var presence = redis.NewScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZADD", KEYS[1], now + ttl, ARGV[1])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
redis.call("PEXPIRE", KEYS[1], ttl)
return redis.call("ZRANGE", KEYS[1], 0, -1)
`)

// Presence records member in the set key for ttl, by the node's clock,
// and returns the members whose presence has not expired, member
// included: one script call of four commands.
func (n *Node) Presence(ctx context.Context, key, member string, ttl time.Duration) ([]string, error) {
	ms := strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
	out, err := presence.Run(ctx, n.client, []string{key}, member, ms).StringSlice()
	if err != nil {
		return nil, n.fail("presence", key, err)
	}
	return out, nil
}
