package engine

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// plainAcquire sends the acquisition of one lock that claims no
// occurrence and commits no fence as plain commands instead of the acquire
// script: SET NX PX, GET and PTTL of the lock, HMGET of its state and GET
// of its waiters' turn,
// in that order, in the node's pipeline, on a connection whose server was
// read already (see askInfo): a call that reads it goes as the script,
// as does a waiter's. A script
// call costs a server several times a plain command (each command it runs
// goes through Lua), and such an acquisition needs neither the pause key
// nor the atomicity of a script:
//
//   - what the script checks before its SET, the state's fields and the
//     turn, is read after it: a lock held as a part (a running value, see
//     claim), a waiter's turn, a state of another type or a field that is
//     not a number is answered by the script instead, sent in a second
//     round trip (the SET then holds our value, which the script finds
//     ours, deletes where a part or a turn holds, or leaves to the
//     caller's release of the failed attempt);
//   - the fence read after the SET is at least the last commit of an
//     earlier holder there: a commit writes only while its value holds,
//     before our SET could;
//   - the holder GET reads when the SET is refused may have changed in
//     between: a refusal names a holder it saw, as with the script.
//
// Its answer is shaped as the acquire script's, so that the call's decode
// is the same.
type plainAcquire struct {
	req  AcquireRequest
	set  *redis.BoolCmd
	get  *redis.StringCmd
	left *redis.DurationCmd
	st   *redis.SliceCmd
	turn *redis.StringCmd
}

// plainEligible reports whether a request of a call of one lock may be
// sent as plain commands, on a client whose keys live on one server.
func plainEligible(n *Node, reqs []AcquireRequest) bool {
	return len(reqs) == 1 && reqs[0].Occurrence == 0 && reqs[0].FenceFloor == 0 && reqs[0].Waiter == "" && n.singleServer()
}

// queue adds the commands to pipe.
func (p *plainAcquire) queue(ctx context.Context, pipe redis.Pipeliner) {
	k := p.req.Keys
	p.set = pipe.SetNX(ctx, k.Lock, p.req.Value, p.req.TTL)
	p.get = pipe.Get(ctx, k.Lock)
	p.left = pipe.PTTL(ctx, k.Lock)
	p.st = pipe.HMGet(ctx, k.State, k.FenceField(), k.MarkField(), "r|"+k.Name)
	p.turn = pipe.Get(ctx, k.Turn)
}

// answer returns the script-shaped answer of the commands sent, and false
// when the script must decide (see plainAcquire): anything but a clean
// grant or refusal.
func (p *plainAcquire) answer(ctx context.Context) (*redis.Cmd, bool) {
	uptime, runID := "", "" // completed from the connection's server (readInfo)
	set, setErr := p.set.Result()
	cur, getErr := p.get.Result()
	left, leftErr := p.left.Result()
	st, stErr := p.st.Result()
	_, turnErr := p.turn.Result()
	if !errors.Is(turnErr, redis.Nil) {
		if turnErr != nil && !ServerError(turnErr) {
			return netFailed(ctx, turnErr), true
		}
		return nil, false // a waiter's turn (or a key of another type): the script tells
	}
	for _, err := range []error{setErr, getErr, leftErr, stErr} {
		if err != nil && !errors.Is(err, redis.Nil) && !ServerError(err) {
			return netFailed(ctx, err), true // the pipeline failed: so does the call
		}
	}
	if setErr != nil || stErr != nil || leftErr != nil || getErr != nil && (set || !errors.Is(getErr, redis.Nil)) || len(st) != 3 || st[2] != nil {
		return nil, false
	}
	fence, _ := st[0].(string)
	mark, _ := st[1].(string)
	if badNumber(fence) || badNumber(mark) {
		return nil, false
	}
	if fence == "" {
		fence = "0"
	}
	cmd := redis.NewCmd(ctx)
	switch {
	case set:
		cmd.SetVal([]any{uptime, runID, int64(1), fence, "", int64(0)})
	case getErr != nil || cur == p.req.Value:
		return nil, false // gone since, or ours: the script tells
	default:
		cmd.SetVal([]any{uptime, runID, int64(0), fence, cur, max(left.Milliseconds(), 0)})
	}
	return cmd, true
}

// badNumber reports whether a state field's value, when present, is not
// a whole number below 2^53 (as the prelude's badNumber).
func badNumber(v string) bool {
	if v == "" {
		return false
	}
	if len(v) > 16 {
		return true
	}
	var x uint64
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return true
		}
		x = x*10 + uint64(c-'0')
	}
	return x >= 1<<53
}

// netFailed returns a command failed with a pipeline's error.
func netFailed(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return cmd
}
