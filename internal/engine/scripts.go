package engine

import (
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The scripts are immutable after package initialisation. They are sent
// with EVALSHA; a server that answers NOSCRIPT gets the call again as
// EVAL, with the script's text, in one round trip.
var (
	//go:embed lua/prelude.lua
	preludeSrc string
	//go:embed lua/acquire.lua
	acquireSrc string
	//go:embed lua/commit.lua
	commitSrc string
	//go:embed lua/extend.lua
	extendSrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/claim.lua
	claimSrc string
	//go:embed lua/free.lua
	freeSrc string

	acquireScript = newScript("acquire", acquireSrc, 2, 3)
	commitScript  = newScript("commit", commitSrc, 0, 2)
	extendScript  = newScript("extend", extendSrc, 0, 2)
	releaseScript = newScript("release", releaseSrc, 0, 2)
	claimScript   = newScript("claim", claimSrc, 2, 3)
	freeScript    = newScript("free", freeSrc, 0, 2)
)

// script is a lock script (its redis.Script sends it by hash, or with
// its source to a server that lacks it). Every lock script acts on any number of locks: a call passes one leading
// argument, then each lock's keys and arguments, and the answer is head
// values, then width values per lock. Calls of one script with the same
// leading argument can thus be merged into one (mergeCalls).
type script struct {
	*redis.Script
	name        string
	src         string
	head, width int
}

// newScript returns the lock script whose body is src, after the prelude
// the lock scripts share (lua/prelude.lua).
func newScript(name, src string, head, width int) *script {
	src = preludeSrc + src
	return &script{Script: redis.NewScript(src), name: name, src: src, head: head, width: width}
}

// answer returns the answer of a call of s carrying items locks: head
// values, then width values per lock, or the call's error.
func (s *script) answer(cmd *redis.Cmd, items int) ([]any, error) {
	res, err := cmd.Slice()
	if err == nil && len(res) != s.head+items*s.width {
		err = fmt.Errorf("unexpected %s reply of %d values for %d locks: %v", s.name, len(res), items, res)
	}
	return res, err
}

// ScriptName returns the name of the lock script ("acquire", "commit",
// "extend", "release", "claim" or "free") that cmd calls, by EVALSHA or EVAL, or "" for
// any other command. Tests that fault one phase of the protocol use it.
func ScriptName(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) < 2 {
		return ""
	}
	id := fmt.Sprint(args[1])
	for _, s := range []*script{acquireScript, commitScript, extendScript, releaseScript, claimScript, freeScript} {
		if id == s.Hash() || id == s.src {
			return s.name
		}
	}
	return ""
}
