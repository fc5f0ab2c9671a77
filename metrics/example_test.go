package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// The Collector plugged into a Scheduler (here over the in-memory locker of
// schedulertest) and registered on the caller's registry.
func Example() {
	m, err := metrics.New()
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	s, err := scheduler.New(schedulertest.NewLocker(), scheduler.WithObserver(m.SchedulerObserver()))
	if err != nil {
		log.Fatal(err)
	}
	_ = s.Add("invoice-run", "*/15 * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
		return nil
	}))
	_ = s.Add("cleanup", "@daily", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
		return errors.New("disk full")
	}))
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for _, job := range []string{"invoice-run", "cleanup"} {
		if _, err := s.Trigger(ctx, job); err != nil {
			log.Fatal(err)
		}
	}
	_ = s.Shutdown(ctx) // waits for the runs
	<-done

	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		for _, series := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range series.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetName() {
			case "redcron_scheduler_runs_total":
				if v := series.GetCounter().GetValue(); v > 0 {
					fmt.Printf("%s{job_name=%q,result=%q} %v\n", mf.GetName(), labels["job_name"], labels["result"], v)
				}
			case "redcron_scheduler_last_success_timestamp_seconds":
				fmt.Printf("%s succeeded: %v\n", labels["job_name"], series.GetGauge().GetValue() > 0)
			}
		}
	}
	// Output:
	// cleanup succeeded: false
	// invoice-run succeeded: true
	// redcron_scheduler_runs_total{job_name="cleanup",result="failure"} 1
	// redcron_scheduler_runs_total{job_name="invoice-run",result="success"} 1
}

// The wiring in a service: one Collector for the Redlock and the
// Scheduler, registered on a private registry served on /metrics.
func ExampleNew() {
	addrs := []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"}
	// Declaring the nodes makes their series exist before the first lock.
	m, err := metrics.New(metrics.WithNodes(addrs...))
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	var nodes []*store.Node
	for _, addr := range addrs {
		node, err := store.NewNode(addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1}))
		if err != nil {
			log.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	locks, err := mutex.New(nodes, mutex.WithObserver(m.LockObserver()))
	if err != nil {
		log.Fatal(err)
	}
	s, err := scheduler.New(scheduler.NewRedlockLocker(locks), scheduler.WithObserver(m.SchedulerObserver()))
	if err != nil {
		log.Fatal(err)
	}
	_ = s // Add jobs, then Run.

	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
}
