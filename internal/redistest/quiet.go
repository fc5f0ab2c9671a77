package redistest

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// QuietClients silences go-redis's own logging for the test binary: its
// every failed dial, which tests that kill and stop servers cause on
// purpose, would bury the tests' output. Call it from TestMain, before
// m.Run.
func QuietClients() { redis.SetLogger(discard{}) }

// discard is a go-redis logger that drops everything.
type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}
