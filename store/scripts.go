package store

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts are immutable after package initialisation; Script.Run sends
// EVALSHA and falls back to EVAL when the server answers NOSCRIPT.
var (
	//go:embed lua/acquire.lua
	acquireSrc string
	//go:embed lua/commit.lua
	commitSrc string
	//go:embed lua/extend.lua
	extendSrc string
	//go:embed lua/release.lua
	releaseSrc string

	acquireScript = redis.NewScript(acquireSrc)
	commitScript  = redis.NewScript(commitSrc)
	extendScript  = redis.NewScript(extendSrc)
	releaseScript = redis.NewScript(releaseSrc)
)
