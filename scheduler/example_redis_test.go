package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// A service embeds the scheduler in every replica. Each tick of each job
// runs on exactly one replica; the others skip it.
func ExampleNewRedlockLocker() {
	// One client per independent Redis master (not replicas of one another).
	var nodes []*store.Node
	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
		client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
		node, err := store.NewNode(addr, client)
		if err != nil {
			log.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	// The leak scanner keeps this replica's heartbeat, without which other
	// replicas' scans would take its locks for orphans; the Redlock asks it
	// whether the heartbeat is fresh (and the clock close to the nodes').
	var scan *leakscan.Scanner
	locks, err := mutex.New(nodes, mutex.WithOwnerCheck(func(owner string, extending bool) error {
		return scan.Check(owner, extending)
	}))
	if err != nil {
		log.Fatal(err)
	}
	// The replica's id: the owner of its locks and of its heartbeat.
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s-%d", host, os.Getpid())
	s, err := scheduler.New(scheduler.NewRedlockLocker(locks), scheduler.WithInstanceID(id), scheduler.WithLogger(slog.Default()))
	if err != nil {
		log.Fatal(err)
	}
	if scan, err = leakscan.New(locks, id, leakscan.WithLogger(slog.Default())); err != nil {
		log.Fatal(err)
	}
	scanCtx, stopScan := context.WithCancel(context.Background())
	defer stopScan()
	go scan.Run(scanCtx)

	err = s.Add("invoice-run", "*/15 * * * *", scheduler.JobFunc(func(ctx context.Context, run scheduler.RunInfo) error {
		// ctx is cancelled if the lock is lost (context.Cause matches
		// mutex.ErrLost) or on shutdown (scheduler.ErrShutdown).
		// Pass run.Fence to the storage you write to, so that it refuses a
		// run whose lease ended while it was paused:
		//   UPDATE invoices SET ..., fence = $1 WHERE ... AND fence < $1
		return sendInvoices(ctx, run.Tick, run.Fence)
	}))
	if err != nil {
		log.Fatal(err) // an invalid spec or name is refused here, naming the job
	}

	go func() {
		if err := s.Run(context.Background()); !errors.Is(err, scheduler.ErrClosed) {
			log.Print(err)
		}
	}()

	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-stop.Done()
	// Let running jobs finish for 30 s, then cancel them and release their locks.
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	if err := s.Shutdown(ctx); err != nil {
		log.Print(err)
	}
	_ = locks.Flush(ctx) // releases still under way on slow nodes
}

func sendInvoices(ctx context.Context, tick time.Time, fence uint64) error { return ctx.Err() }
