package redcron_test

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// A service's main: every replica runs it; each tick of the job runs on
// exactly one replica, which writes its result fenced, so that a replica
// paused past its lease cannot overwrite a newer run's.
func ExampleNew() {
	reg := prometheus.NewRegistry() // serve it on /metrics
	s, err := redcron.New([]string{"redis-a:6379", "redis-b:6379", "redis-c:6379"},
		redcron.WithLogger(slog.Default()), redcron.WithMetrics(reg))
	if err != nil {
		log.Fatal(err) // a bad address or option, named
	}
	data := redis.NewClient(&redis.Options{Addr: "redis-data:6379"}) // any storage that checks the fence
	err = s.Add("invoice-run", "*/15 * * * *", scheduler.JobFunc(func(ctx context.Context, run scheduler.RunInfo) error {
		// ctx is cancelled if the lease is lost (mutex.ErrLost) or
		// at shutdown (scheduler.ErrShutdown).
		_, err := store.FencedSet(ctx, data, "invoices:last-run", run.Fence, run.Tick.Format(time.RFC3339))
		return err
	}))
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		if err := s.Run(context.Background()); !errors.Is(err, scheduler.ErrClosed) {
			log.Print(err)
		}
	}()
	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-stop.Done()
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second) // let running jobs finish
	defer done()
	if err := s.Shutdown(ctx); err != nil {
		log.Print(err)
	}
}
