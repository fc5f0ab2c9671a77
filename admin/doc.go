// Package admin reads and steers a redcron fleet from any Go program: a
// deploy script that pauses a job first, a release pipeline that triggers
// one, a check that reads a job's history. The admin command
// (cmd/redcronctl) and the status page (package statuspage) are built on
// it.
//
// A Client works on the fleet's nodes themselves, every independent Redis
// master its Redlocks use, under its key prefix; it needs no replica of
// its own:
//
//	c, err := admin.New(nodes, admin.Options{}) // nodes: store.NewNode per master
//	st, err := c.Status(ctx)                     // jobs, replicas, nodes, leaks
//	_, err = c.Pause(ctx, "nightly-report")       // no replica runs its ticks...
//	_, err = c.Resume(ctx, "nightly-report")      // ...until this
//	run, _, err := c.Trigger(ctx, "nightly-report") // one replica runs it once, now
//	records, _, err := c.History(ctx, "nightly-report", 20)
//
// Pause, Resume and Trigger need a majority of the nodes, and say which
// nodes missed them; each is recorded in the job's ledger as the
// operator's action (Options.Operator, by default user@host), which
// History lists among the runs. They act only on a job some live replica
// publishes in its job table, unless Options.AnyJob is set. FixLeaks
// deletes the leaked locks a Status found, by compare-and-delete.
//
// Errors match the sentinels of package scheduler with errors.Is:
// scheduler.ErrUnknownJob for a name no live replica publishes,
// mutex.ErrNoQuorum for an action fewer than a majority of the nodes
// took (or a history read from fewer), mutex.ErrInvalidOption for
// bad Options; a trigger no replica took in time matches
// context.DeadlineExceeded. Each error names its job or node. Errors and
// records carry the nodes' and the jobs' own words: pass them through
// your redaction before showing them to others.
package admin
