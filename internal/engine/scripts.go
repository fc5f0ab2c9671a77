package engine

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The scripts are immutable after package initialisation. They are sent
// with EVALSHA; a server that answers NOSCRIPT gets the call again as
// EVAL, with the script's text, in one round trip.
var (
	//go:embed lua/base.lua
	baseSrc string
	//go:embed lua/prelude.lua
	preludeSrc string
	//go:embed lua/acquire.lua
	acquireSrc string
	//go:embed lua/acquire1.lua
	acquire1Src string
	//go:embed lua/commit.lua
	commitSrc string
	//go:embed lua/commit1.lua
	commit1Src string
	//go:embed lua/extend.lua
	extendSrc string
	//go:embed lua/release.lua
	releaseSrc string
	//go:embed lua/release1.lua
	release1Src string
	//go:embed lua/claim.lua
	claimSrc string
	//go:embed lua/free.lua
	freeSrc string

	acquireScript = newScript("acquire", acquireSrc, 2, 4)
	commitScript  = newScript("commit", commitSrc, 0, 2)
	extendScript  = newScript("extend", extendSrc, 0, 2)
	releaseScript = newScript("release", releaseSrc, 0, 2)
	// acquire1Script, commit1Script and release1Script are acquireScript,
	// commitScript and releaseScript for a call of one lock (see flush).
	acquire1Script = newLeanScript("acquire", acquire1Src, 2, 4)
	commit1Script  = newLeanScript("commit", commit1Src, 0, 2)
	release1Script = newLeanScript("release", release1Src, 0, 2)
	claimScript    = newScript("claim", claimSrc, 2, 3)
	freeScript     = newScript("free", freeSrc, 0, 2)
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

// newScript returns the lock script whose body is src, after the preludes
// the lock scripts share (lua/base.lua, lua/prelude.lua).
func newScript(name, src string, head, width int) *script {
	src = baseSrc + preludeSrc + src
	return &script{Script: redis.NewScript(src), name: name, src: src, head: head, width: width}
}

// newLeanScript returns the lock script of one lock whose body is src,
// after lua/base.lua only.
func newLeanScript(name, src string, head, width int) *script {
	src = baseSrc + src
	return &script{Script: redis.NewScript(src), name: name, src: src, head: head, width: width}
}

// lean returns the script to send for a call of s carrying items locks:
// its lean form for one lock, if it has one.
func (s *script) lean(items int) *script {
	switch {
	case items != 1:
		return s
	case s == acquireScript:
		return acquire1Script
	case s == commitScript:
		return commit1Script
	case s == releaseScript:
		return release1Script
	}
	return s
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
	for _, s := range []*script{acquireScript, acquire1Script, commitScript, commit1Script, extendScript, releaseScript, release1Script, claimScript, freeScript} {
		if id == s.Hash() || id == s.src {
			return s.name
		}
	}
	return ""
}

// parseServer reads the run id and uptime an acquire script reports: nil
// when not asked for, an error in infoErr when unreadable, and an error in
// err when the reply is not the script's.
func parseServer(uptime, runID any) (info *Info, infoErr, err error) {
	u, ok1 := uptime.(string)
	id, ok2 := runID.(string)
	switch {
	case !ok1 || !ok2:
		return nil, nil, fmt.Errorf("unexpected server info %v, %v", uptime, runID)
	case u == "" && id == "":
		return nil, nil, nil
	}
	i, ierr := parseInfo(u, id)
	if ierr != nil {
		return nil, ierr, nil
	}
	return &i, nil, nil
}

// parseAcquire reads one lock's answer to an acquire script: its status,
// fence counter and detail, and, from the acquire scripts (not the claim
// script's answers), how long its holder has left.
func parseAcquire(res []any) (AcquireReply, error) {
	status, ok1 := res[0].(int64)
	fence, ok2 := res[1].(string)
	detail, ok3 := res[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return AcquireReply{}, fmt.Errorf("unexpected reply %v", res)
	}
	if status == -1 {
		return AcquireReply{}, replyError(detail)
	}
	f, err := strconv.ParseUint(fence, 10, 64)
	switch {
	case err != nil:
		return AcquireReply{}, fmt.Errorf("fence counter %q: %w", fence, err)
	case f >= 1<<53: // the scripts compare fences as doubles
		return AcquireReply{}, fmt.Errorf("fence counter %d is not below 2^53", f)
	}
	rep := AcquireReply{Fence: f}
	switch status {
	case 1:
		rep.Status = Acquired
	case 0:
		rep.Status, rep.Holder = Held, detail
		if len(res) > 3 {
			ms, ok := res[3].(int64)
			if !ok {
				return AcquireReply{}, fmt.Errorf("unexpected reply %v", res)
			}
			rep.HolderTTL = time.Duration(ms) * time.Millisecond
		}
	case 2:
		rep.Status = AlreadyRun
		if rep.Mark, err = strconv.ParseInt(detail, 10, 64); err != nil {
			return AcquireReply{}, fmt.Errorf("occurrence mark %q: %w", detail, err)
		}
	case 3:
		rep.Status, rep.Holder = Paused, detail
	case 4:
		rep.Status = FenceAhead
	case 5:
		rep.Status, rep.Holder = ParentLost, detail
	default:
		return AcquireReply{}, fmt.Errorf("unexpected status %d", status)
	}
	return rep, nil
}

// parseBool reads one lock's two answer values from a compare-and-act
// script (commit, extend, release): 1 or 0, or -1 with the server's error.
func parseBool(res []any) (bool, error) {
	result, ok1 := res[0].(int64)
	detail, ok2 := res[1].(string)
	switch {
	case !ok1 || !ok2:
		return false, fmt.Errorf("unexpected reply %v", res)
	case result == -1:
		return false, replyError(detail)
	}
	return result == 1, nil
}

// isNoScript reports whether err is a server's NOSCRIPT reply.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// failedCmd returns a command that failed with err before it was sent.
func failedCmd(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return cmd
}
