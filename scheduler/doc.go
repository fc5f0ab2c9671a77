// Package scheduler is an embeddable cron scheduler for replicated
// services: every replica runs the same Scheduler with the same jobs, and
// each tick of each job runs on exactly one of them.
//
// # Ticks
//
// A tick is an occurrence of a job's schedule, named by the schedule's own
// time (the cron spec's Next), never by the moment a replica's timer fired.
// Every replica computes the same ticks, provided the jobs have the same
// names and specs and the same WithLocation (UTC by default); "@every d"
// ticks are aligned to the Unix epoch for the same reason. A one-time job
// ("@at t", see Scheduler.Add) has one tick, t: its mark makes it run once
// in the fleet, also on replicas that register it later.
//
// # Exactly one run per tick
//
// When a tick is due, every replica asks the Locker for the job's lease for
// that tick (LockRequest.Tick). The Locker grants it to one of them and
// refuses the others: mutex.ErrHeld while the winner is taking it, mutex.ErrAlreadyRun
// once the winner has claimed the tick (over Redis, its commit marks the
// tick on a majority of nodes right after it wins the vote) or the tick
// (or a later one) has been run, which is what a replica whose clock is
// late gets. The winner runs the job with a context that is
// cancelled if the lease is lost, then releases the lease. Refusals are
// normal outcomes, reported as skipped ticks; undecided attempts
// (mutex.ErrNoQuorum: a split vote, nodes down) are retried with jitter within
// the job's misfire grace.
//
// The lock is per job: a tick whose previous run still holds the lock is
// skipped (ErrOverlap; the skip's reason is overlap), unless WithOverlap
// makes it wait for that run to end, or cancel it. The lease carries a
// fencing token, RunInfo.Fence, which increases with every acquisition; a
// job that writes to storage should pass it along, so that a run whose
// lease ended while it was paused cannot overwrite the work of the next
// one.
//
// "Exactly one" holds as long as the Locker keeps its promises and ticks are
// not missed: a tick is skipped (and reported) rather than run twice when
// no replica can reach the Locker within the grace, or when every replica
// notices it too late; see WithMisfireGrace and WithCatchUp.
//
// # Use
//
// Create a Scheduler with New and a Locker (the Redis one in production,
// an in-memory one in tests), register jobs with Add, and call Run,
// which blocks; Shutdown stops it gracefully. Observe outcomes through
// events (WithObserver), logs (WithLogger) or Entries.
package scheduler
