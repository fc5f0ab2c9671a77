package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// Short TTLs, so that a restarted server's quarantine ends within seconds.
const (
	quickMaxTTL      = 400 * time.Millisecond
	quickNodeTimeout = 100 * time.Millisecond
)

// guardedOn returns a Redlock over nodes that does not trust them: the
// restart check is on.
func guardedOn(t testing.TB, nodes []*store.Node) *mutex.Redlock {
	t.Helper()
	r, err := mutex.New(nodes, mutex.WithMaxTTL(quickMaxTTL), mutex.WithNodeTimeout(quickNodeTimeout),
		mutex.WithRetryDelay(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitUp waits until server s has been up long enough for its votes to
// count again (the max TTL plus the uptime's second of resolution).
func waitUp(ctx context.Context, t *testing.T, s *redistest.Server) {
	t.Helper()
	n, err := store.NewNode(s.Addr(), s.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := (*engine.Node)(n).Info(ctx)
		if err == nil && info.Uptime >= quickMaxTTL+2*time.Second {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not up long enough: %v, %v", s.Addr(), info, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// votes lists a failed acquisition's tally, for failure messages.
func votes(err error) string {
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) {
		return "no tally"
	}
	var b strings.Builder
	for _, n := range qe.Nodes {
		fmt.Fprintf(&b, "\n  %s %v %v", n.Node, n.Vote, n.Err)
	}
	return b.String()
}

// TestRollingRestartKeepsTicksRun: a tick run and marked on every node must
// stay refused after a majority of the nodes restarted empty, one at a
// time, each waiting out its quarantine. A node that started after the
// tick cannot vouch that it did not run, so the attempt fails closed.
func TestRollingRestartKeepsTicksRun(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxTimeout(t, time.Minute)
	for _, s := range c.Nodes() {
		waitUp(ctx, t, s)
	}
	r := guardedOn(t, nodesOf(t, c))
	// A tick a few seconds ahead, as with a lease won ahead: the nodes, up
	// for a few seconds, were up since before its earliest claim (the max
	// TTL and the 2 s skew margin before it), so they vouch for it; the
	// same nodes restarted from now on will not.
	tick := time.Now().Add(quickMaxTTL + time.Second)
	l, err := r.TryLock(ctx, "job", quickMaxTTL, mutex.Occurrence(tick))
	if err != nil {
		t.Fatalf("first run of the tick: %v%s", err, votes(err))
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // rolling, each waiting out its quarantine
		c.Node(i).Restart()
		waitUp(ctx, t, c.Node(i))
	}
	later := guardedOn(t, nodesOf(t, c)) // a replica started now, with fresh clients
	for _, rl := range []*mutex.Redlock{r, later} {
		l, err := rl.TryLock(ctx, "job", quickMaxTTL, mutex.Occurrence(tick))
		if err == nil {
			_ = l.Release(ctx)
			t.Fatal("the tick was claimed again after a rolling restart of a majority")
		}
		// Refused as undecided, the restarted nodes warming up; or as
		// already run, when the first run's release, sent to the slowest
		// node after a majority had answered, reached it only after its
		// restart and marked the tick there again.
		var qe *mutex.QuorumError
		if !errors.Is(err, mutex.ErrAlreadyRun) &&
			(!errors.Is(err, mutex.ErrNoQuorum) || !errors.As(err, &qe) || count(qe.Nodes, "warming_up") != 2) {
			t.Fatalf("old tick after the restarts: %v, want no quorum with 2 restarted votes, or already run%s", err, votes(err))
		}
	}
	// A tick far enough after the restarts (the last one was 2.4 s ago) is
	// vouched for by every node.
	next := time.Now().Add(2 * time.Second)
	if l, err := later.TryLock(ctx, "job", quickMaxTTL, mutex.Occurrence(next)); err != nil {
		t.Fatalf("a tick after the restarts: %v%s", err, votes(err))
	} else {
		_ = l.Release(ctx)
	}
}

// infoRewrite is a go-redis hook that rewrites the server info in the
// answers to acquire scripts that asked for it, while rewrite is set.
type infoRewrite struct {
	rewrite atomic.Pointer[func(uptime, runID string) (string, string)]
}

func (*infoRewrite) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*infoRewrite) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *infoRewrite) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		f := h.rewrite.Load()
		if f == nil {
			return err
		}
		for _, c := range cmds {
			cmd, ok := c.(*redis.Cmd)
			if !ok || !asksInfo(c) {
				continue
			}
			res, rerr := cmd.Slice()
			if rerr != nil || len(res) < 2 {
				continue
			}
			up, id := (*f)(fmt.Sprint(res[0]), fmt.Sprint(res[1]))
			res[0], res[1] = up, id
			cmd.SetVal(res)
		}
		return err
	}
}

// asksInfo reports whether c is an acquire script call asking for the
// server's info: its leading argument, after the keys, is "1".
func asksInfo(c redis.Cmder) bool {
	if engine.ScriptName(c) != "acquire" {
		return false
	}
	args := c.Args()
	var nkeys int
	if _, err := fmt.Sscan(fmt.Sprint(args[2]), &nkeys); err != nil || len(args) <= 3+nkeys {
		return false
	}
	return fmt.Sprint(args[3+nkeys]) == "1"
}

// hooked returns the nodes of c, each with an infoRewrite hook.
func hooked(t *testing.T, c *redistest.Cluster) ([]*store.Node, []*infoRewrite) {
	hooks := make([]*infoRewrite, len(c.Nodes()))
	nodes := nodesWith(t, c, func(i int, cl *redis.Client) *redis.Client {
		hooks[i] = &infoRewrite{}
		cl.AddHook(hooks[i])
		return cl
	})
	return nodes, hooks
}

// TestUnreadableUptimeFailsClosed: a node whose uptime cannot be read (a
// negative one, after its clock stepped back) is not counted.
func TestUnreadableUptimeFailsClosed(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxTimeout(t, time.Minute)
	nodes, hooks := hooked(t, c)
	negative := func(_, id string) (string, string) { return "-3", id }
	hooks[0].rewrite.Store(&negative)
	hooks[1].rewrite.Store(&negative)
	for _, s := range c.Nodes() {
		waitUp(ctx, t, s)
	}
	r := guardedOn(t, nodes)
	l, err := r.TryLock(ctx, "job", quickMaxTTL)
	if err == nil {
		_ = l.Release(ctx)
		t.Fatal("acquired with two nodes whose uptime is unreadable")
	}
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrNoQuorum) || !errors.As(err, &qe) || count(qe.Nodes, "error") != 2 ||
		!strings.Contains(err.Error(), `"-3" is negative`) {
		t.Fatalf("got %v, want no quorum, two nodes not counted for their uptime%s", err, votes(err))
	}
}

// TestChangedRunIDIsRestart: a node whose server changed (a failover to a
// replica that lacks recent writes, another server behind the address)
// waits out the quarantine like a restarted one, timed by the client's
// clock, whatever uptime the new server reports.
func TestChangedRunIDIsRestart(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxTimeout(t, time.Minute)
	for _, s := range c.Nodes() {
		waitUp(ctx, t, s)
	}
	holder := guardedOn(t, nodesOf(t, c))
	held, err := holder.TryLock(ctx, "job", quickMaxTTL)
	if err != nil {
		t.Fatalf("holder: %v%s", err, votes(err))
	}
	_, stop := held.KeepAlive(ctx) // it may lose the lease later, rightly: a majority of the nodes lose it
	defer stop()

	nodes, hooks := hooked(t, c)
	r := guardedOn(t, nodes)
	if l, err := r.TryLock(ctx, "other", quickMaxTTL); err != nil { // r sees the servers
		t.Fatalf("other lock: %v%s", err, votes(err))
	} else {
		_ = l.Release(ctx)
	}
	// A quiet spell longer than the quarantine: the change must be timed
	// from when it is seen, not from r's last look at the old servers.
	<-time.After(quickMaxTTL + 1500*time.Millisecond)
	// Nodes 0 and 1 fail over to servers that never saw the lock and have
	// been up for a day.
	for i := range 2 {
		failover := func(_, id string) (string, string) { return "86400", strings.Repeat(string(rune('a'+i)), len(id)) }
		if err := c.Node(i).Client(t).FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		hooks[i].rewrite.Store(&failover)
	}
	l, err := r.TryLock(ctx, "job", quickMaxTTL)
	if err == nil {
		_ = l.Release(ctx)
		t.Fatal("a second holder won the lock through two failed-over nodes")
	}
	// The failed-over nodes are seen as restarted: each that answered
	// before the decision votes warming_up,
	// or, where the holder's keepalive gave the lock back meanwhile (its
	// extension found it gone: heal), held by the holder, counted for it:
	// the value was set before the new server was seen, by the holder that
	// holds the lock (ErrHeld then, rather than ErrNoQuorum).
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) || !errors.Is(err, mutex.ErrNoQuorum) && !errors.Is(err, mutex.ErrHeld) {
		t.Fatalf("got %v, want no quorum or held%s", err, votes(err))
	}
	answered := 0
	for i, res := range qe.Nodes[:2] {
		if res.Vote == "" {
			continue // not needed for the decision (two others decided it)
		}
		answered++
		if !res.WarmingUp || res.Vote != "warming_up" && (res.Vote != "held" || res.Holder != held.Value()) {
			t.Errorf("failed-over node %d: vote %s (warming up: %v, holder %q), want its restart seen%s", i, res.Vote, res.WarmingUp, res.Holder, votes(err))
		}
	}
	if answered == 0 {
		t.Errorf("neither failed-over node answered in time%s", votes(err))
	}
}

// TestSameServerTwice: one server listed under two addresses has one vote,
// not two, with trusted nodes too: once both names have answered, neither
// counts, and the error names both.
func TestSameServerTwice(t *testing.T) {
	c := redistest.Start(t, 2)
	ctx := ctxTimeout(t, time.Minute)
	for _, s := range c.Nodes() {
		waitUp(ctx, t, s)
	}
	nodes := nodesOf(t, c)
	port := c.Node(0).Addr()[strings.LastIndex(c.Node(0).Addr(), ":"):]
	alias := redis.NewClient(&redis.Options{Addr: "localhost" + port, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = alias.Close() })
	twin, err := store.NewNode("localhost"+port, alias)
	if err != nil {
		t.Fatal(err)
	}
	c.Node(1).Kill() // the one real server left must not make a quorum alone
	for _, trusted := range []bool{false, true} {
		opts := []mutex.Option{mutex.WithMaxTTL(quickMaxTTL), mutex.WithNodeTimeout(quickNodeTimeout)}
		if trusted {
			opts = append(opts, mutex.WithTrustedNodes())
		}
		r, err := mutex.New(append(slices.Clone(nodes), twin), opts...) // 3 names, quorum 2, but 2 servers
		if err != nil {
			t.Fatal(err)
		}
		l, err := r.TryLock(ctx, "job", quickMaxTTL)
		if err == nil {
			_ = l.Release(ctx)
			t.Fatalf("trusted %v: acquired with one server's vote counted under two names", trusted)
		}
		msg := err.Error()
		if !errors.Is(err, mutex.ErrNoQuorum) || !strings.Contains(msg, "node not counted") || !strings.Contains(msg, c.Node(0).Addr()) ||
			!strings.Contains(msg, "localhost"+port) || !strings.Contains(msg, "one redis server") {
			t.Fatalf("trusted %v: got %v, want no quorum naming both addresses of one server%s", trusted, err, votes(err))
		}
	}
}

// TestOccurrenceBeyondReach: an occurrence older than the state TTL keeps
// its mark for is refused at once: its mark may have expired,
// so winning it would prove nothing.
func TestOccurrenceBeyondReach(t *testing.T) {
	c := redistest.Start(t, 1)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	old := time.Now().Add(-8 * 24 * time.Hour)
	if l, err := r.TryLock(ctx, "job", time.Second, mutex.Occurrence(old)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "WithStateTTL") {
		if l != nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("an occurrence 8 days old with a 7-day state TTL: %v, want ErrInvalidOption naming WithStateTTL", err)
	}
	reach := 7*24*time.Hour - time.Minute - 2*time.Second
	check := lockwire.Of(r).Check
	if err := check("job", time.Second, 0, reach); err != nil {
		t.Errorf("Check with the longest reach: %v", err)
	}
	if err := check("job", time.Second, 0, reach+time.Millisecond); !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("Check with a reach past the state TTL less the max TTL and 2 s: %v", err)
	}
	// A claim further ahead than the max TTL: a node restarted before the
	// occurrence could not vouch for it.
	ahead := time.Now().Add(time.Hour)
	if l, err := r.TryLock(ctx, "job", time.Second, mutex.Occurrence(ahead)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "ahead") {
		if l != nil {
			_ = l.Release(ctx)
		}
		t.Fatalf("an occurrence an hour ahead: %v, want ErrInvalidOption", err)
	}
	// A state TTL that leaves no time to claim an occurrence in.
	if _, err := mutex.New(storeNodes(r), mutex.WithStateTTL(5*time.Minute), mutex.WithMaxTTL(5*time.Minute)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "WithStateTTL") {
		t.Errorf("New with a state TTL no longer than the max TTL: %v, want ErrInvalidOption naming WithStateTTL", err)
	}
}
