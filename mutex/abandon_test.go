package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redis/go-redis/v9"
)

// dropCommits is a go-redis hook that fails every pipeline carrying a
// commit script call without sending it, as the store fails a call whose
// context ended in its queue or whose node is backing off.
type dropCommits struct{}

func (dropCommits) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (dropCommits) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dropCommits) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, isCommit) {
			return next(ctx, cmds)
		}
		err := fmt.Errorf("test: commit dropped: %w", engine.ErrNotSent)
		for _, c := range cmds {
			c.SetErr(err)
		}
		return err
	}
}

// isCommit reports whether c calls the commit script.
func isCommit(c redis.Cmder) bool { return engine.ScriptName(c) == "commit" }

// slowCommitAnswers is a go-redis hook that delays the answers to every
// pipeline carrying a commit script call by d: the server has applied
// the commit, and its answer is on its way (a slow link).
type slowCommitAnswers struct{ d time.Duration }

func (slowCommitAnswers) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (slowCommitAnswers) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h slowCommitAnswers) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if slices.ContainsFunc(cmds, isCommit) {
			time.Sleep(h.d)
		}
		return err
	}
}

// TestCommitInFlightWhenContextEnds: the caller's context ends while the
// answers to a commit, which every node applied, are on their way, well
// within the node timeout and the validity. The commit counts: the lock
// is acquired (its occurrence is marked on every node, and an attempt
// that failed there would leave the tick refused to every replica while
// none runs it).
func TestCommitInFlightWhenContextEnds(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlockOn(t, nodesWith(t, c, func(_ int, cl *redis.Client) *redis.Client {
		cl.AddHook(slowCommitAnswers{d: 100 * time.Millisecond})
		return cl
	}))
	tick := time.Now().Truncate(time.Second)
	// Load the scripts: a new server answers the first call with NOSCRIPT.
	warm, err := r.TryLock(ctxTimeout(t, 5*time.Second), "warm", 4*time.Second, mutex.Occurrence(tick))
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	l, err := r.TryLock(ctx, "job", 4*time.Second, mutex.Occurrence(tick))
	if err != nil {
		t.Fatalf("TryLock whose commit was applied and answered after its context ended: %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the context did not end during the commit: the test proves nothing")
	}
	if err := l.Release(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Errorf("release: %v", err)
	}
}

// TestCommitFailureReleasesVotes: an acquisition granted by every node but
// whose commit never reaches a majority (it is not sent to three nodes of
// five) fails, and leaves no key behind: every node that granted the vote
// is released, also those the commit never reached.
func TestCommitFailureReleasesVotes(t *testing.T) {
	c := redistest.Start(t, 5)
	r := newRedlockOn(t, nodesWith(t, c, func(i int, cl *redis.Client) *redis.Client {
		if i >= 2 {
			cl.AddHook(dropCommits{})
		}
		return cl
	}))

	l, err := r.TryLock(ctxTimeout(t, 10*time.Second), "victim", time.Second, mutex.Occurrence(time.Now()))
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) || qe.Op != "commit" {
		t.Fatalf("TryLock = %v, %v; want a commit QuorumError", l, err)
	}
	if held := c.KeyOn(t, lockKey(t, r, "victim").Lock); slices.Contains(held, true) {
		t.Errorf("lock key left on nodes %v after the failed acquisition", held)
	}
}
