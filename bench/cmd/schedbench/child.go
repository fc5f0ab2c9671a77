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
	"sync"
	"syscall"
	"time"

	"github.com/redcron/redcron/bench/internal/prof"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/scheduler"
)

// replicaArg, as the only argument, makes the program a replica process:
// it reads a replicaSpec as JSON from standard input, runs the replica and
// writes its replicaOutput, gob-encoded, to standard output.
const replicaArg = "-run-replica"

// replicaSpec is what a replica process is to do in one run.
type replicaSpec struct {
	ID     int
	Addrs  []string // the redis-servers
	Prefix string   // the lock keys' prefix, new for each run
	Jobs   int
	Ahead  time.Duration
	// NoLedger turns the lock ledger off (mutex.WithLedger(0, 0)).
	NoLedger bool
	// W0 and W1 bound the measured window of ticks, [W0, W1) in Unix
	// seconds. The replica takes its snapshots at SnapA and SnapB, and
	// stops once it has reported every job's window ticks, or at Deadline.
	W0, W1       int64
	SnapA, SnapB time.Time
	Deadline     time.Time
	// Profile, if not empty, is where to write a CPU profile of the time
	// between the snapshots.
	Profile string
}

// replicaOutput is what a replica process reports of its run.
type replicaOutput struct {
	Recs   []record   // its scheduler events
	InJobs []record   // the start delays its jobs saw
	Fails  []lockFail // its failed lock acquisitions
	A, B   replicaSnap
	// GoroutinesLeft is how many goroutines more than before the replica
	// was built were left after its scheduler stopped and its clients
	// were closed.
	GoroutinesLeft int
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
	var spec replicaSpec
	err := json.NewDecoder(stdin).Decode(&spec)
	var out replicaOutput
	if err == nil {
		out, err = runReplica(ctx, spec)
	}
	if err == nil {
		err = gob.NewEncoder(stdout).Encode(out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "schedbench: replica %d: %v\n", spec.ID, err)
		return 1
	}
	return 0
}

// runReplica runs one replica as spec says, in this process.
func runReplica(ctx context.Context, spec replicaSpec) (replicaOutput, error) {
	base := runtime.NumGoroutine()
	ticks := int(spec.W1 - spec.W0)
	// Room for a run's start and end and two refusals per job and tick,
	// warm-up, window and settling included.
	allTicks := int(time.Until(spec.Deadline).Seconds()) + 2
	col := &collector{w0: spec.W0, w1: spec.W1,
		recs:   newBuffer[record](4 * spec.Jobs * allTicks),
		inJobs: newBuffer[record](spec.Jobs * allTicks),
		fails:  newBuffer[lockFail](spec.Jobs * allTicks)}
	rep, err := newReplica(spec.ID, spec.Addrs, spec.Prefix, spec.Jobs, spec.Ahead, spec.NoLedger, col)
	if err != nil {
		return replicaOutput{}, err
	}
	closeRep := sync.OnceFunc(rep.close)
	defer closeRep()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- rep.s.Run(runCtx) }()
	go rep.scan.Run(runCtx) // heartbeats until the replica ends
	// stopRun shuts the scheduler down; on an early return, deferred.
	stopRun := sync.OnceValue(func() error {
		sctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		serr := rep.s.Shutdown(sctx)
		cancel()
		if err := <-ran; !errors.Is(err, scheduler.ErrClosed) {
			return fmt.Errorf("the scheduler's Run: %w", err)
		}
		return serr
	})
	defer stopRun()

	var out replicaOutput
	if !sleepUntil(ctx, spec.SnapA) {
		return replicaOutput{}, ctx.Err()
	}
	var stopCPU func() error
	if spec.Profile != "" {
		if stopCPU, err = prof.StartCPU(spec.Profile); err != nil {
			return replicaOutput{}, err
		}
	}
	out.A = rep.snapshot()
	ok := sleepUntil(ctx, spec.SnapB)
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
	for col.handled.Load() < want && time.Now().Before(spec.Deadline) && ctx.Err() == nil {
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
	out.Recs, out.InJobs, out.Fails = col.records(), col.jobStarts(), col.lockFails()
	return out, nil
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
