package main

import (
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/redcron/redcron/bench/internal/prof"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/scheduler"
)

// replicaArg, as the only argument, makes the program a replica process.
// It reads a replicaSpec as JSON from standard input, builds the replica
// and registers its jobs, and writes a replicaReady, gob-encoded, to
// standard output; then it reads a replicaGo as JSON from standard input,
// runs the replica from its Start, and writes its replicaOutput,
// gob-encoded, to standard output. Between the two, the benchmark waits
// until every replica is ready, so that they start together.
const replicaArg = "-run-replica"

// replicaSpec is what a replica process is to build in one run.
type replicaSpec struct {
	ID     int
	Addrs  []string // the redis-servers
	Prefix string   // the lock keys' prefix, new for each run
	Jobs   int
	// Spec is the jobs' cron spec (six fields): "* * * * * *", or a daily
	// one for the rush.
	Spec  string
	Ahead time.Duration
	// NoLedger turns the lock ledger off (mutex.WithLedger(0, 0)).
	NoLedger bool
	// Wiring is how the replica is built: wiringScheduler or
	// wiringRedcron.
	Wiring string
	// LockTTL is each job's lock TTL and MaxTTL the Redlock's max TTL (0:
	// the library's defaults); JobSleep how long a run sleeps.
	LockTTL, MaxTTL, JobSleep time.Duration
	// Profile, if not empty, is where to write a CPU profile of the time
	// between the snapshots.
	Profile string
}

// replicaReady is what a replica reports once built, with its jobs
// registered.
type replicaReady struct {
	// Register is how long adding the jobs took.
	Register time.Duration
	// HeapBefore and HeapAfter are the live heap (runtime.MemStats.HeapAlloc
	// after a garbage collection) before and after adding the jobs (the
	// scheduler, its Redlock and clients already built).
	HeapBefore, HeapAfter uint64
	// Build is the commit this replica's executable was built from
	// (debug.ReadBuildInfo), with "+changes" for a modified work tree.
	Build string
}

// replicaGo is when a ready replica runs and what it measures.
type replicaGo struct {
	// Start is when the replica calls its scheduler's Run.
	Start time.Time
	// W0 and W1 bound the measured window of ticks, [W0, W1) in Unix
	// seconds. The replica takes its snapshots at SnapA and SnapB, and
	// stops once it has reported every job's window ticks, or at Deadline.
	W0, W1       int64
	SnapA, SnapB time.Time
	Deadline     time.Time
}

// replicaOutput is what a replica process reports of its run.
type replicaOutput struct {
	Recs   []record   // its scheduler events for window ticks
	InJobs []record   // the start delays its jobs saw
	Fails  []lockFail // its failed lock acquisitions for (or held for) window ticks
	A, B   replicaSnap
	// GoroutinesLeft is how many goroutines more than before the replica
	// was built were left after its scheduler stopped and its clients
	// were closed.
	GoroutinesLeft int
	// ShutdownErr is why the scheduler's Shutdown failed, if it did.
	ShutdownErr string
}

// replicaSnap is a replica's counters at one instant.
type replicaSnap struct {
	Nodes engine.Stats      // summed over its nodes
	Cmds  map[string]uint64 // the commands its clients sent, by name
	CPU   time.Duration     // user + system CPU of its process
}

// replicaMain is the main function of a replica process; it returns the
// exit status.
func replicaMain(stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	redisnode.SilenceClientLogs()
	in := json.NewDecoder(stdin)
	enc := gob.NewEncoder(stdout)
	var spec replicaSpec
	err := in.Decode(&spec)
	var out replicaOutput
	if err == nil {
		out, err = runReplica(ctx, spec, func(r replicaReady) (replicaGo, error) {
			var g replicaGo
			if err := enc.Encode(r); err != nil {
				return g, err
			}
			return g, in.Decode(&g)
		})
	}
	if err == nil {
		err = enc.Encode(out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "schedbench: replica %d: %v\n", spec.ID, err)
		return 1
	}
	return 0
}

// runReplica builds and runs one replica as spec says, in this process:
// once its jobs are registered, it reports ready and learns when to run
// from ready.
func runReplica(ctx context.Context, spec replicaSpec, ready func(replicaReady) (replicaGo, error)) (replicaOutput, error) {
	base := runtime.NumGoroutine()
	col := &collector{}
	rep, err := newReplica(spec, col)
	if err != nil {
		return replicaOutput{}, err
	}
	closeRep := sync.OnceFunc(rep.close)
	defer closeRep()
	r := replicaReady{Build: buildCommit()}
	r.HeapBefore = liveHeap()
	t0 := time.Now()
	if err := rep.addJobs(spec, col); err != nil {
		return replicaOutput{}, err
	}
	r.Register = time.Since(t0)
	r.HeapAfter = liveHeap()
	g, err := ready(r)
	if err != nil {
		return replicaOutput{}, fmt.Errorf("waiting for the start: %w", err)
	}
	// The buffers hold the events of the window's ticks: room for a run's
	// start and end and two refusals per job and tick.
	ticks := int(g.W1 - g.W0)
	col.w0, col.w1 = g.W0, g.W1
	col.recs = newBuffer[record](4 * spec.Jobs * ticks)
	col.inJobs = newBuffer[record](spec.Jobs * ticks)
	col.fails = newBuffer[lockFail](spec.Jobs * ticks)
	if !sleepUntil(ctx, g.Start) {
		return replicaOutput{}, ctx.Err()
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- rep.run(runCtx) }()
	// stopRun shuts the scheduler down; on an early return, deferred. A
	// shutdown that did not complete in time (runs or lock attempts still
	// going: an overloaded replica) is reported, not a failure of the run.
	var shutdownErr string
	stopRun := sync.OnceValue(func() error {
		sctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		if err := rep.shutdown(sctx); err != nil {
			shutdownErr = err.Error()
			fmt.Fprintf(os.Stderr, "  replica %d: shutdown: %v\n", spec.ID, err)
		}
		cancel()
		if err := <-ran; !errors.Is(err, scheduler.ErrClosed) {
			return fmt.Errorf("the scheduler's Run: %w", err)
		}
		return nil
	})
	defer stopRun()

	var out replicaOutput
	if !sleepUntil(ctx, g.SnapA) {
		return replicaOutput{}, ctx.Err()
	}
	var stopCPU func() error
	if spec.Profile != "" {
		if stopCPU, err = prof.StartCPU(spec.Profile); err != nil {
			return replicaOutput{}, err
		}
	}
	out.A = rep.snapshot()
	ok := sleepUntil(ctx, g.SnapB)
	out.B = rep.snapshot()
	if stopCPU != nil {
		if err := stopCPU(); err != nil {
			return replicaOutput{}, err
		}
	}
	if !ok {
		return replicaOutput{}, ctx.Err()
	}

	want := int64(spec.Jobs * ticks)
	for col.handled.Load() < want && time.Now().Before(g.Deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if got := col.handled.Load(); got < want && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "  replica %d: %d of %d outcomes of window ticks reported by the deadline; shutting down\n",
			spec.ID, got, want)
	}
	if err := stopRun(); err != nil {
		return replicaOutput{}, err
	}
	if err := ctx.Err(); err != nil {
		return replicaOutput{}, err
	}
	closeRep()
	out.GoroutinesLeft = goroutinesAbove(base)
	out.ShutdownErr = shutdownErr
	out.Recs, out.InJobs, out.Fails = col.records(), col.jobStarts(), col.lockFails()
	return out, nil
}

// liveHeap returns the bytes of heap objects after a garbage collection:
// the heap in use by what is still reachable.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// buildCommit returns the VCS revision this executable was built from,
// short, with "+changes" if the work tree was modified, or "unknown".
func buildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, mod := "unknown", ""
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value[:min(len(s.Value), 7)]
		case s.Key == "vcs.modified" && s.Value == "true":
			mod = " +changes"
		}
	}
	return rev + mod
}

// goroutinesAbove returns how many goroutines there are above base, once
// they stop ending (the clients' ends, say), or after a second.
func goroutinesAbove(base int) int {
	n := runtime.NumGoroutine()
	for range 20 {
		if n <= base {
			break
		}
		time.Sleep(50 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n - base
}

// snapshot returns the replica's counters now.
func (r *replica) snapshot() replicaSnap {
	return replicaSnap{Nodes: r.nodeStats(), Cmds: r.counter.snapshot(), CPU: processCPU()}
}
