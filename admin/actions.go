package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/scheduler"
)

// Pause pauses the job fleet-wide: it sets the job's pause key, with no
// TTL and naming the operator, on every node. While a majority of the
// nodes has it, no replica wins a tick of the job (each reports it
// skipped, reason paused), across restarts and deploys, until Resume; a
// manual run (Trigger) is not refused. It returns each node's error (nil
// where the key was set), in the order given to New, and records the
// pause in the job's ledger. Its error names the job: it matches
// scheduler.ErrUnknownJob for a name no live replica publishes (see
// Options.AnyJob), and mutex.ErrNoQuorum when fewer than a majority of
// the nodes took it; the pause is then taken back where it was set.
func (c *Client) Pause(ctx context.Context, job string) ([]error, error) {
	return c.pause(ctx, job, true)
}

// Resume resumes a paused job: it deletes the job's pause key on every
// node. It returns each node's error (nil where the key is gone), in the
// order given to New, and records the resume in the job's ledger. Its
// error matches scheduler.ErrUnknownJob and mutex.ErrNoQuorum as
// Pause's does. A node that missed it refuses the job's ticks until it is
// resumed there too: run it again once the node is back.
func (c *Client) Resume(ctx context.Context, job string) ([]error, error) {
	return c.pause(ctx, job, false)
}

// pause pauses the job (on) or resumes it.
func (c *Client) pause(ctx context.Context, job string, on bool) ([]error, error) {
	action := map[bool]string{true: "pause", false: "resume"}[on]
	if err := c.checkJob(ctx, job); err != nil {
		return nil, err
	}
	errs, err := c.cl.Pause(ctx, job, c.who, on)
	c.logger.LogAttrs(ctx, level(err), "admin: "+action, slog.String("job", job), slog.String("who", c.who),
		slog.Int("nodes", engine.Answered(errs)), slog.Int("of", len(c.cl.Nodes)), errAttr(err))
	return c.perNode(errs), wrap(fmt.Sprintf("%s %q", action, job), err)
}

// Trigger has one replica with the job run it once, now, under its lock,
// paused or not: it places a request naming the operator on every node,
// which one replica takes within about a second, and waits for the run's
// record in the job's ledger, which it returns (with the request's
// Ticket). The request lives until ctx's deadline (a minute without one):
// one no replica took by then, less 3 s, is withdrawn. Trigger returns
// each node's error placing it (nil where it was placed), in the order
// given to New, and records the trigger in the job's ledger. Its error
// names the job: it matches scheduler.ErrUnknownJob for a name no live
// replica publishes (see Options.AnyJob), mutex.ErrNoQuorum when
// fewer than a majority of the nodes took the request, and
// context.DeadlineExceeded (or ctx's error) when no replica took it in
// time (no replica has the job, or none is running).
func (c *Client) Trigger(ctx context.Context, job string) (Record, []error, error) {
	if err := c.checkJob(ctx, job); err != nil {
		return Record{}, nil, err
	}
	ttl := time.Minute
	if deadline, ok := ctx.Deadline(); ok {
		ttl = time.Until(deadline)
	}
	tr, err := c.cl.Trigger(ctx, job, c.who, ttl)
	c.logger.LogAttrs(ctx, level(err), "admin: trigger", slog.String("job", job), slog.String("who", c.who),
		slog.String("replica", tr.Run.Owner), slog.Uint64("fence", tr.Run.Fence), errAttr(err))
	rec := Record{Job: job, Ticket: tr.Ticket}
	if err == nil {
		rec = recordOf(tr.Run)
	}
	if errors.Is(err, cluster.ErrNotTaken) {
		cause := ctx.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		return rec, c.perNode(tr.Placed), fmt.Errorf("trigger %q: %w (%w)", job, err, cause)
	}
	return rec, c.perNode(tr.Placed), wrap(fmt.Sprintf("trigger %q", job), err)
}

// level is the log level of an action that ended with err.
func level(err error) slog.Level {
	if err != nil {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// errAttr is an action's error as a log attribute; empty for none.
func errAttr(err error) slog.Attr {
	if err == nil {
		return slog.Attr{}
	}
	return slog.String("error", err.Error())
}

// Tagged returns the names of the jobs carrying tag (scheduler.WithTags),
// sorted: those some live replica publishes with it in its job table. It
// reads the heartbeats and the job tables, not every key. Pause, Resume,
// Trigger and History act on one job each: to pause a tag, pause each
// job Tagged returns (a job tagged later is not paused by it). Its error
// matches scheduler.ErrUnknownJob when no live replica publishes a job with
// the tag; when the job table of some live replica could not be read, the
// jobs found are returned with an error naming those replicas, as the
// selection may miss some of theirs.
func (c *Client) Tagged(ctx context.Context, tag string) ([]string, error) {
	if tag == "" {
		return nil, fmt.Errorf("%w: empty tag", scheduler.ErrInvalidJob)
	}
	t, err := c.cl.Published(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobs tagged %q: %w", tag, err)
	}
	names := t.Tagged(tag)
	if unread := t.Unread(); len(unread) > 0 {
		return names, fmt.Errorf("jobs tagged %q: the job tables of %d live replicas could not be read (%s): some of their jobs may carry it too",
			tag, len(unread), strings.Join(unread, ", "))
	}
	if len(names) == 0 {
		return nil, &unknownJob{fmt.Errorf("%w: no live replica (of %d) publishes a job tagged %q", cluster.ErrNoSuchJob, len(t.Of), tag)}
	}
	return names, nil
}
