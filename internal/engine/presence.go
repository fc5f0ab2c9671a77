package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// presence adds ARGV[1] to the sorted set KEYS[1], scored by the node's
// time (ms) plus ARGV[2] ms, removes the members whose score has passed,
// keeps the set for ARGV[2] ms, and returns the node's time and the members
// left with their scores.
var presence = redis.NewScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZADD", KEYS[1], now + ttl, ARGV[1])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
redis.call("PEXPIRE", KEYS[1], ttl)
local out = redis.call("ZRANGE", KEYS[1], 0, -1, "WITHSCORES")
table.insert(out, 1, tostring(now))
return out
`)

// Presence records member in the set key for ttl, by the node's clock,
// and returns the members whose presence has not expired, member
// included, each with how long ago it was last recorded: one script call
// of five commands.
func (n *Node) Presence(ctx context.Context, key, member string, ttl time.Duration) (map[string]time.Duration, error) {
	ms := strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
	out, err := presence.Run(ctx, n.client, []string{key}, member, ms).StringSlice()
	if err == nil && len(out)%2 != 1 {
		err = fmt.Errorf("presence: %d values in the answer", len(out))
	}
	if err != nil {
		return nil, n.fail("presence", key, err)
	}
	now, _ := strconv.ParseInt(out[0], 10, 64)
	ages := make(map[string]time.Duration, len(out)/2)
	for i := 1; i+1 < len(out); i += 2 {
		expires, _ := strconv.ParseFloat(out[i+1], 64)
		ages[out[i]] = ttl - time.Duration(int64(expires)-now)*time.Millisecond
	}
	return ages, nil
}
