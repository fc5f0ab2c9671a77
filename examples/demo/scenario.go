package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redcron/redcron/mutex"
)

// plan is when each step of the scenario happens, from the start.
type plan struct {
	kill2   time.Duration // kill two nodes: the quorum holds
	kill3   time.Duration // kill a third: quorum lost
	restart time.Duration // restart the three, empty
	stall   time.Duration // slow run, and stall the replica running it
	resume  time.Duration // resume it, at the earliest
}

// newPlan scales the scenario to the demo's duration.
func newPlan(d time.Duration) plan {
	at := func(f float64) time.Duration { return time.Duration(f * float64(d)).Round(100 * time.Millisecond) }
	return plan{kill2: at(0.20), kill3: at(0.35), restart: at(0.45), stall: at(0.60), resume: at(0.80)}
}

// The nodes the scenario kills (0-based): node 2 and 4, then node 3.
const (
	killFirst  = 1
	killSecond = 3
	killThird  = 2
)

// scenario plays the faults and narrates them.
type scenario struct {
	cfg  config
	plan plan
	cl   *cluster
	reps []*replica
	slow *slowRun
	rec  *recorder
	nar  *narrator
	t0   time.Time
}

// run plays the scenario until it is over or ctx is done.
func (s *scenario) run(ctx context.Context) {
	if s.cl.external() {
		s.nar.say("real servers: skipping the node kills and restarts; a replica will still be stalled")
	} else {
		if !s.waitFor(ctx, s.plan.kill2) || !s.kill(killFirst, killSecond) {
			return
		}
		if !s.waitFor(ctx, s.plan.kill3) || !s.kill(killThird) {
			return
		}
		if !s.waitFor(ctx, s.plan.restart) || !s.restart(killFirst, killThird, killSecond) {
			return
		}
	}
	if !s.waitFor(ctx, s.plan.stall) {
		return
	}
	s.stall(ctx)
}

// waitFor waits until d after the start.
func (s *scenario) waitFor(ctx context.Context, d time.Duration) bool {
	return sleepUntil(ctx, s.t0.Add(d))
}

// kill kills nodes and says what it means for the quorum.
func (s *scenario) kill(nodes ...int) bool {
	if err := s.cl.kill(nodes...); err != nil {
		s.nar.say("could not kill %s: %v", nodeList(nodes), err)
		return false
	}
	up, total, q := s.cl.upCount(), len(s.cl.addrs), s.cl.quorum()
	if up >= q {
		s.nar.say("killed %s: %d of %d remain, quorum %d still holds", nodeList(nodes), up, total, q)
	} else {
		s.nar.say("killed %s: %d of %d remain, below the quorum of %d. Quorum lost: no replica may run a tick now", nodeList(nodes), up, total, q)
	}
	return true
}

// restart restarts killed nodes, empty.
func (s *scenario) restart(nodes ...int) bool {
	if err := s.cl.restart(nodes...); err != nil {
		s.nar.say("could not restart %s: %v", nodeList(nodes), err)
		return false
	}
	up, total := s.cl.upCount(), len(s.cl.addrs)
	s.nar.say("restarted %s on the same addresses, empty: their locks, fence counters and marks are lost, as after a restart without persistence", nodeList(nodes))
	s.nar.say("%d of %d nodes are back: quorum is back (the nodes are trusted, so they vote at once; with real servers, leave WithTrustedNodes off so a restarted node waits out the max TTL)", up, total)
	return true
}

// stall makes the next run of the first job slow, cuts the replica that
// runs it off every node, and narrates how its lease is lost and another
// replica runs the job's next tick.
func (s *scenario) stall(ctx context.Context) {
	job, ttl := s.slow.job, s.cfg.lockTTL
	s.slow.arm()
	s.nar.say("the next run of %s will be slow (%v); the replica that gets it will be stalled", job, s.slow.length)

	var st slowStart
	select {
	case st = <-s.slow.started:
	case <-time.After(3 * time.Second):
		if s.slow.disarm() {
			s.nar.say("no run of %s started within 3s: no replica to stall", job)
			return
		}
		st = <-s.slow.started // claimed just now
	case <-ctx.Done():
		s.slow.disarm()
		return
	}
	r := s.replica(st.replica)
	r.gate.stall()
	s.rec.fault(time.Now(), r.id+" stalled")
	s.nar.say("stalled %s while it runs %s tick %s (fence %d): its connections to every node are cut and new ones refused, so it cannot extend its lease (TTL %v)",
		r.id, job, clock(st.info.Tick), st.info.Fence, ttl)
	defer func() {
		r.gate.resume()
		s.rec.fault(time.Now(), r.id+" resumed")
		s.nar.say("resumed %s: it reaches the nodes again and competes for the next ticks", r.id)
	}()

	select {
	case end := <-s.slow.ended:
		switch {
		case errors.Is(end.cause, mutex.ErrLost):
			s.nar.say("%s: %s tick %s cancelled after %v: context.Cause is mutex.ErrLost, so the job stopped (it had %v of work left)",
				end.replica, job, clock(end.info.Tick), end.ran.Round(10*time.Millisecond), (s.slow.length - end.ran).Round(10*time.Millisecond))
		case end.cause != nil:
			s.nar.say("%s: %s tick %s ended after %v with cause %v (not a lost lease)", end.replica, job, clock(end.info.Tick), end.ran.Round(10*time.Millisecond), end.cause)
		default:
			s.nar.say("%s: %s tick %s finished its %v of work without noticing the stall", end.replica, job, clock(end.info.Tick), end.ran.Round(10*time.Millisecond))
		}
	case <-time.After(s.slow.length + 2*time.Second):
		s.nar.say("%s: %s tick %s did not return", r.id, job, clock(st.info.Tick))
	case <-ctx.Done():
		return
	}

	// Wait for the next run of the job: another replica's, since this one
	// cannot reach the nodes.
	deadline := time.Now().Add(ttl + 2*time.Second)
	for {
		if next, ok := s.rec.firstRunAfter(job, st.info.Tick); ok {
			between := int(next.Tick.Sub(st.info.Tick)/time.Second) - 1
			gap := ""
			if between > 0 {
				gap = fmt.Sprintf("; the %d tick(s) in between were skipped while the stalled lease still held the lock", between)
			}
			s.nar.say("%s tick %s ran on %s with fence %d > %d: another replica ran the next tick once the stalled lease expired%s",
				job, clock(next.Tick), next.Replica, next.Fence, st.info.Fence, gap)
			break
		}
		if time.Now().After(deadline) {
			s.nar.say("no later run of %s after %v", job, ttl+2*time.Second)
			break
		}
		if !sleepUntil(ctx, time.Now().Add(50*time.Millisecond)) {
			return
		}
	}
	s.waitFor(ctx, s.plan.resume)
}

// replica returns the replica called id.
func (s *scenario) replica(id string) *replica {
	for _, r := range s.reps {
		if r.id == id {
			return r
		}
	}
	panic("unknown replica " + id)
}

// nodeList names nodes (0-based) for narration: "node 2 and 4".
func nodeList(nodes []int) string {
	var names []string
	for _, i := range nodes {
		names = append(names, fmt.Sprint(i+1))
	}
	switch len(names) {
	case 0:
		return "no node"
	case 1:
		return "node " + names[0]
	}
	return "node " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
