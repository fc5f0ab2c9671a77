// Command service is an example of a service that embeds redcron: every
// replica runs this same program, and each tick of each job runs on exactly
// one of them.
//
// Configuration comes from the environment:
//
//	REDCRON_ADDRS       independent Redis masters, comma-separated (required)
//	REDCRON_USERNAME    Redis ACL user (optional)
//	REDCRON_PASSWORD    Redis password (optional; never logged)
//	REDCRON_TLS         "1" to connect with TLS (system roots)
//	REDCRON_LISTEN      HTTP address for /metrics, /healthz and /redcron/ (default :8080)
//	REDCRON_ADMIN_TOKEN lets the status page act (pause, resume, trigger, fix
//	                    leaks) for requests with it as their basic-auth
//	                    password; the user name names the operator. Without
//	                    it the page is read-only.
//	REDCRON_INSTANCE    this replica's id (default: host name and pid)
//	REDCRON_MAX_TTL     mutex.WithMaxTTL, e.g. 1m (default 1m)
//	REDCRON_TRUSTED     "1" if the nodes persist with appendfsync always
//	REDCRON_GRACE       how long shutdown waits for running jobs (default 30s)
//	REDCRON_FAST        "1" to run the example jobs every second or two, for trying it out
//
// On SIGTERM or SIGINT it stops starting jobs, lets running ones finish
// within REDCRON_GRACE, then cancels them (their context's cause is
// scheduler.ErrShutdown), releases their locks so that another replica can
// take the next tick at once, and exits.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

func main() {
	for _, arg := range os.Args[1:] {
		help := arg == "-h" || arg == "-help" || arg == "--help"
		out := os.Stderr
		if help {
			out = os.Stdout
		}
		fmt.Fprint(out, usage)
		if help {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "service: unexpected argument %q: it is configured from the environment\n", arg)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, os.Getenv); err != nil {
		log.Error("service failed", slog.Any("error", err))
		os.Exit(1)
	}
}

const usage = `Usage: service

An example service that embeds redcron: run it on every replica; each tick
of each job runs on exactly one of them. It is configured from the
environment:

  REDCRON_ADDRS       independent Redis masters, comma-separated (required)
  REDCRON_USERNAME    Redis ACL user
  REDCRON_PASSWORD    Redis password (never logged)
  REDCRON_TLS         "1" to connect with TLS (system roots)
  REDCRON_LISTEN      HTTP address for /metrics, /healthz and the status page,
                      /redcron/ (default :8080)
  REDCRON_ADMIN_TOKEN lets the status page act for requests with this token as
                      their basic-auth password (the user names the operator;
                      /redcron/login asks a browser for it); read-only without
  REDCRON_INSTANCE    this replica's id (default: host name and pid)
  REDCRON_MAX_TTL     mutex.WithMaxTTL, e.g. 1m (default 1m)
  REDCRON_TRUSTED     "1" if the nodes persist with appendfsync always
  REDCRON_GRACE       how long shutdown waits for running jobs (default 30s)
  REDCRON_FAST        "1" to run the example jobs every second or two

SIGTERM or SIGINT stops it gracefully.
`

// config is what the environment says.
type config struct {
	addrs    []string
	username string
	password string
	tls      bool
	listen   string
	instance string
	maxTTL   time.Duration
	trusted  bool
	grace    time.Duration
	fast     bool
	token    string // the status page's admin token; "": read-only
}

func parseConfig(env func(string) string) (config, error) {
	c := config{listen: ":8080", maxTTL: time.Minute, grace: 30 * time.Second,
		username: env("REDCRON_USERNAME"), password: env("REDCRON_PASSWORD"),
		tls: env("REDCRON_TLS") == "1", trusted: env("REDCRON_TRUSTED") == "1", fast: env("REDCRON_FAST") == "1",
		token: env("REDCRON_ADMIN_TOKEN")}
	for _, a := range strings.Split(env("REDCRON_ADDRS"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.addrs = append(c.addrs, a)
		}
	}
	if len(c.addrs) == 0 {
		return c, errors.New("REDCRON_ADDRS: no Redis address given")
	}
	if v := env("REDCRON_LISTEN"); v != "" {
		c.listen = v
	}
	c.instance = env("REDCRON_INSTANCE")
	if c.instance == "" {
		host, _ := os.Hostname()
		c.instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	for name, d := range map[string]*time.Duration{"REDCRON_MAX_TTL": &c.maxTTL, "REDCRON_GRACE": &c.grace} {
		if v := env(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil {
				return c, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return c, nil
}

func run(log *slog.Logger, env func(string) string) error {
	cfg, err := parseConfig(env)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	lockOpts := []mutex.Option{mutex.WithMaxTTL(cfg.maxTTL)}
	if cfg.trusted {
		lockOpts = append(lockOpts, mutex.WithTrustedNodes())
	}
	schedOpts := []scheduler.Option{scheduler.WithInstanceID(cfg.instance)}
	if cfg.fast {
		schedOpts = append(schedOpts, scheduler.WithSeconds())
	}
	s, err := redcron.New(cfg.addrs,
		redcron.WithLogger(log),
		redcron.WithMetrics(reg),
		redcron.WithRedisOptions(func(o *redis.Options) {
			o.Username, o.Password = cfg.username, cfg.password
			if cfg.tls {
				o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			}
		}),
		redcron.WithLockOptions(lockOpts...),
		redcron.WithSchedulerOptions(schedOpts...))
	if err != nil {
		return err
	}
	defer func() { // on an early return; closes the clients if Run was never reached
		ctx, cancel := context.WithTimeout(context.Background(), cfg.grace)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	// The jobs' own data lives in the first node here, for brevity; a real
	// service writes to its own store, with the run's fence.
	dataOpts := &redis.Options{Addr: cfg.addrs[0], Username: cfg.username, Password: cfg.password}
	if cfg.tls {
		dataOpts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	data := redis.NewClient(dataOpts)
	defer data.Close()
	if err := addJobs(s, data, cfg, log); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("GET /healthz", health(s))
	if err := mountStatusPage(mux, s, cfg.token); err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	httpErr := make(chan error, 1)
	go func() { httpErr <- srv.Serve(ln) }()
	log.Info("serving", slog.String("addr", ln.Addr().String()), slog.String("instance", cfg.instance))

	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(context.Background()) }()

	stop, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	select {
	case <-stop.Done():
		log.Info("shutting down", slog.Duration("grace", cfg.grace))
	case err := <-runErr:
		return fmt.Errorf("scheduler stopped: %w", err)
	case err := <-httpErr:
		return fmt.Errorf("http: %w", err)
	}
	ctx, done := context.WithTimeout(context.Background(), cfg.grace)
	defer done()
	shutdownErr := s.Shutdown(ctx)
	if err := <-runErr; !errors.Is(err, scheduler.ErrClosed) {
		shutdownErr = errors.Join(shutdownErr, err)
	}
	hctx, hdone := context.WithTimeout(context.Background(), 5*time.Second)
	defer hdone()
	shutdownErr = errors.Join(shutdownErr, srv.Shutdown(hctx))
	log.Info("stopped", slog.Any("error", shutdownErr))
	return shutdownErr
}
