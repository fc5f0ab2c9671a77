package store

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The scripts are immutable after package initialisation. They are sent
// with EVALSHA; a server that answers NOSCRIPT gets SCRIPT LOAD and the
// call again, in one round trip.
var (
	//go:embed lua/acquire.lua
	acquireSrc string
	//go:embed lua/commit.lua
	commitSrc string
	//go:embed lua/extend.lua
	extendSrc string
	//go:embed lua/release.lua
	releaseSrc string

	acquireScript = newScript(acquireSrc)
	commitScript  = newScript(commitSrc)
	extendScript  = newScript(extendSrc)
	releaseScript = newScript(releaseSrc)
)

// script is a Lua script with its source, which SCRIPT LOAD needs.
type script struct {
	*redis.Script
	src string
}

func newScript(src string) script { return script{redis.NewScript(src), src} }
