package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/fenced_set.lua
var fencedSetSrc string

var fencedSetScript = redis.NewScript(fencedSetSrc)

// FencedSet is the storage side of fencing, for data kept in Redis: it
// writes value to the hash at key, with the fencing token fence, only if
// fence is larger than the token of the write it holds, atomically. It
// reports whether it wrote. A lock holder that was paused past its lease
// and writes late, with its old token, is refused once the next holder has
// written. c is any go-redis client of the store (which need not be one of
// the lock's nodes).
//
// For SQL stores the same rule is a conditional update:
//
//	UPDATE t SET value = $2, fence = $1 WHERE id = $3 AND fence < $1
func FencedSet(ctx context.Context, c redis.Scripter, key string, fence uint64, value string) (bool, error) {
	if fence == 0 {
		return false, errors.New("store: FencedSet: fence 0 (fencing is off?)")
	}
	ok, err := fencedSetScript.Run(ctx, c, []string{key}, fence, value).Bool()
	if err != nil {
		return false, fmt.Errorf("store: FencedSet %q: %w", key, err)
	}
	return ok, nil
}

// FencedGet returns the value and fence last written by FencedSet at key
// (zero values if none).
func FencedGet(ctx context.Context, c redis.Cmdable, key string) (value string, fence uint64, err error) {
	m, err := c.HGetAll(ctx, key).Result()
	if err != nil {
		return "", 0, fmt.Errorf("store: FencedGet %q: %w", key, err)
	}
	if f, ok := m["fence"]; ok {
		if fence, err = strconv.ParseUint(f, 10, 64); err != nil {
			return "", 0, fmt.Errorf("store: FencedGet %q: fence %q: %w", key, f, err)
		}
	}
	return m["value"], fence, nil
}
