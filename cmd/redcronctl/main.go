// Command redcronctl is the admin command of a redcron fleet, a shell over
// package admin (github.com/redcron/redcron/admin), which any Go program
// can use to do the same. Install it with
//
//	go install github.com/redcron/redcron/cmd/redcronctl@latest
//
// It finds, and with -fix removes, leaked redcron locks on
// the independent Redis masters a fleet of schedulers shares. It runs the
// replicas' leak scan: every node is read with SCAN (never KEYS) under the key
// prefix, and each copy of a lock is classified, by its own value, as
//
//	no_expiry    a key with no TTL: it never goes away by itself
//	orphaned     its owner has no live heartbeat on any node (every node scanned)
//	minority     present on fewer nodes than a quorum, older than 10s
//	over_age     acquired longer ago than -max-age
//	unparseable  a key under the prefix that redcron did not write
//
// A live, healthy lock is never reported; a name is reported when one of
// its copies is leaked. A node that cannot be scanned is counted as if it
// held a copy of every lock and a heartbeat of every owner, so a live lock
// with a copy there is not taken for a minority or an orphan. Without -fix the scan only reads. With -fix every
// leaked copy is deleted by compare-and-delete against the value that was
// scanned, so a key that changed hands since the scan is left alone, and
// the copies of a live lock that shares its name with a leftover are not
// touched; keys that are not strings (a hash with no TTL) cannot be
// compared and are always left alone. Note that -fix also deletes
// over-age locks whose owner is alive: a job running longer than -max-age
// loses its lease (its context is cancelled with mutex.ErrLost).
//
// status lists every job whose lock or state is on the nodes: paused or
// not (on how many nodes), the value holding its lock on the most nodes
// (its owner, the replica, and the tick it claims), and the replicas with a
// live heartbeat: each one's instance id, version, job-table digest (marked
// when it differs from the one most replicas publish: a deploy in
// progress, or a replica that misses a job), clock offset from the nodes'
// and the age of its last heartbeat; a table, or with -json a document.
// A replica of an older release, whose heartbeat is a plain number, is
// listed with its heartbeat's age alone.
//
// It also pauses and resumes a job cluster-wide: pause JOB sets the job's
// pause key (no TTL) on every node, and no replica wins a tick of the job
// while a majority has it (each replica reports the tick skipped, reason
// paused; a manual run is not refused); resume JOB deletes it. Both need
// a majority of the nodes, and say when some node missed the change.
//
// history JOB prints the job's ledger merged over the nodes, newest first
// (-last N records): each run's tick, result, replica, fence, start delay,
// duration, tries and error, the ticks that ran nowhere with every
// replica's report, and the operators' actions: pause, resume, trigger
// and leaks -fix record themselves there, by user@host. trigger JOB places a request on the nodes that one
// replica with the job takes within about a second and runs once, under
// the job's lock; it waits for the run's record and prints who took it,
// and withdraws a request no replica took within -timeout.
//
// pause, resume, trigger and history act only on a job some live replica
// publishes in its job table: any other name fails with "no such job"
// (exit 2) and writes nothing, unless -force is given.
//
// -tag TAG selects jobs by a tag their replicas publish
// (scheduler.WithTags): status lists only the jobs carrying it; pause,
// resume, trigger and history, given no JOB, act on each of them in name
// order, as if run once per job (with -json, one document per job), and
// exit 2 if any failed or no live replica publishes a job with the tag.
//
// Usage:
//
//	redcronctl -addrs redis-a:6379,redis-b:6379,redis-c:6379 [flags] [leaks]
//	redcronctl -addrs ... [flags] status
//	redcronctl -addrs ... [flags] pause JOB
//	redcronctl -addrs ... [flags] resume JOB
//	redcronctl -addrs ... [flags] history JOB
//	redcronctl -addrs ... [flags] trigger JOB
//	redcronctl -addrs ... [flags] -tag TAG status|pause|resume|history|trigger
//
// Flags may come after the command too: redcronctl status -json,
// redcronctl history -last 5 JOB, redcronctl pause JOB -force.
//
//	-addrs host:port,...   the independent masters, all of them (or REDCRON_ADDRS)
//	-prefix p              key prefix of the locks (default "redcron")
//	-username u            ACL user (or REDCRON_USERNAME)
//	REDCRON_PASSWORD       the password, from the environment only (-password
//	                       is refused: a flag is visible in the process list)
//	-tls                   connect with TLS
//	-tls-ca file           PEM CA bundle to verify the servers (default: system roots)
//	-tls-cert, -tls-key    PEM client certificate and key
//	-tls-server-name name  name to verify the servers' certificates against
//	                       (default: the host of each address)
//	-tls-insecure-skip-verify  do not verify the servers' certificates
//	-max-age d             report locks acquired longer ago than d (default 24h; 0: off)
//	-timeout d             bound on the whole run (default 30s)
//	-json                  print the JSON document below instead of the table
//	-fix                   delete the leaks found (default: dry run)
//	-force                 pause, resume, trigger, history: act on a job no live
//	                       replica publishes (not deployed yet, or gone)
//	-tag TAG               status: only the jobs tagged TAG; pause, resume,
//	                       trigger, history: each job tagged TAG, without JOB
//
// A flag given on the command line overrides its environment variable.
// The password is never printed, not even in error messages; every error
// shown (a node's, a run's) and every address passes through
// internal/redact, which also takes out the password of any URL.
//
// Exit status:
//
//	0  no leak, every node scanned
//	1  leaks were found (also with -fix: the report says what was found
//	   and what was deleted)
//	2  an error: bad flags, no node could be scanned, or some node could
//	   not be scanned and no leak was found on the others (a partial scan
//	   is not a clean bill of health); for pause and resume, fewer than a
//	   majority of the nodes changed (0 when a majority did); for pause,
//	   resume, trigger and history, a job no live replica publishes
//
// With -json, stdout is one JSON document (stdout is empty when no node
// could be scanned). Fields are never removed or renamed; arrays are [],
// never null:
//
//	{
//	  "prefix": "redcron",          // the key prefix scanned
//	  "nodes": 3,                   // nodes configured
//	  "quorum": 2,                  // nodes a lock needs: nodes/2+1
//	  "scanned": 14,                // keys read, over all nodes
//	  "live_owners": ["web-1"],     // owners with a heartbeat on a quorum
//	  "node_errors": [              // nodes that could not be scanned
//	    {"node": "redis-c:6379", "error": "store: scan on node ...: ..."}
//	  ],
//	  "leaks": [                    // leaked findings, by name
//	    {
//	      "name": "invoice-run",    // the lock's name (a foreign key: the key)
//	      "kind": "lock",           // lock, state, heartbeat or foreign
//	      "classes": ["orphaned"],  // no_expiry, orphaned, minority, over_age, unparseable: its copies'
//	      "copies": [               // one per node holding it, in -addrs order
//	        {
//	          "node": "redis-a:6379",
//	          "key": "redcron:{s0}:invoice-run:lock",
//	          "type": "string",     // the Redis type ("none": vanished during the scan)
//	          "ttl_ms": 21873,      // remaining TTL in ms; -1: no expiry; -2: vanished
//	          "owner": "web-2",     // lock owner; "" if none or not a lock value
//	          "acquired": "2026-11-21T06:10:00.123Z", // RFC 3339, UTC; null if not a lock value
//	          "classes": ["orphaned"]  // this copy's, by its own value; [] for a live lock's copy
//	        }
//	      ]
//	    }
//	  ],
//	  "counts": {"no_expiry": 0, "orphaned": 1, "minority": 0, "over_age": 0, "unparseable": 0},
//	  "fixed": [                    // only with -fix: one entry per leaked copy
//	    {"node": "redis-a:6379", "key": "redcron:{s0}:invoice-run:lock", "deleted": true},
//	    {"node": "redis-b:6379", "key": "redcron:{s5}:state", "deleted": false,
//	     "reason": "not_string"},
//	    {"node": "redis-c:6379", "key": "...", "deleted": false, "reason": "error", "error": "..."}
//	  ]
//	}
//
// "counts" has every class, 0 when absent; a finding in two classes counts
// in both. Leaks are sorted by name, copies are in -addrs order. "reason",
// only when "deleted" is false, is "changed" (the value changed or the key
// went away since the scan), "not_string" or "error" (with "error").
//
// From cron, alerting on leaks and on errors:
//
//	*/10 * * * * redcronctl -addrs redis-a:6379,redis-b:6379,redis-c:6379 -json > /var/log/redcron-leaks.json || alert
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redact"
	"github.com/redis/go-redis/v9"
)

// Environment variables read by the command.
const (
	envAddrs    = "REDCRON_ADDRS"
	envUsername = "REDCRON_USERNAME"
	envPassword = "REDCRON_PASSWORD"
)

func main() {
	// go-redis logs failed dials on its own; run reports every node's
	// error itself, once, through the redaction.
	redis.SetLogger(quietRedis{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quietRedis discards go-redis's internal log.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// config is what the flags and the environment ask for.
type config struct {
	addrs    []string
	prefix   string
	username string
	password string      // never printed
	tls      *tls.Config // nil: plain TCP
	maxAge   time.Duration
	timeout  time.Duration
	json     bool
	fix      bool
	force    bool   // pause, resume, trigger, history: even a job no live replica publishes
	last     int    // history: how many records
	command  string // "" (the leak scan), "status", "history", "pause", "resume" or "trigger"
	job      string // the job of history, pause, resume and trigger
	tag      string // -tag: status lists, and the others act on, the jobs carrying it
}

// usageError is a problem with the flags or the environment; its message
// names the flag or variable at fault.
type usageError struct {
	msg     string
	printed bool // the flag package has printed it already, with the usage
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseCommand reads the command and its job among the arguments that are
// not flags: none (the leak scan), leaks, status, or history, pause,
// resume or trigger JOB.
func parseCommand(cfg *config, args []string) error {
	if len(args) == 0 {
		return nil
	}
	switch args[0] {
	case "leaks": // the default
		if len(args) != 1 {
			return usagef("leaks takes no argument (-fix is a flag)")
		}
		return nil
	case "status":
		if len(args) != 1 {
			return usagef("status takes no argument")
		}
		cfg.command = "status"
		return nil
	case "pause", "resume", "history", "trigger":
		if cfg.tag != "" {
			if len(args) != 1 {
				return usagef("%s -tag %s takes no job name: it acts on each job tagged %s", args[0], cfg.tag, cfg.tag)
			}
			cfg.command = args[0]
			return nil
		}
	default:
		return usagef("unexpected argument %q: the commands are leaks (the default), status, history JOB, pause JOB, resume JOB and trigger JOB; every setting is a flag (-name value)", args[0])
	}
	if len(args) != 2 {
		return usagef("%s takes one job name, or -tag TAG", args[0])
	}
	if err := engine.CheckName(args[1]); err != nil {
		return usagef("%s: %v", args[0], err)
	}
	cfg.command, cfg.job = args[0], args[1]
	return nil
}

// parseConfig parses args and reads the environment through env. It
// returns flag.ErrHelp for -h, after printing the usage to stderr; every
// other error is a *usageError. Whatever the flag package prints goes
// through redact, so a password never reaches stderr.
func parseConfig(args []string, env func(string) string, stderr io.Writer) (*config, error) {
	var (
		cfg       config
		addrs     string
		tlsOn     bool
		caFile    string
		certFile  string
		keyFile   string
		tlsServer string
		insecure  bool
		flagOut   bytes.Buffer
	)
	fs := flag.NewFlagSet("redcronctl", flag.ContinueOnError)
	fs.SetOutput(&flagOut)
	fs.StringVar(&addrs, "addrs", "", "comma-separated `host:port` of every independent Redis master (or $"+envAddrs+")")
	fs.StringVar(&cfg.prefix, "prefix", engine.DefaultPrefix, "key `prefix` of the locks")
	fs.StringVar(&cfg.username, "username", "", "Redis ACL `user` (or $"+envUsername+")")
	fs.StringVar(&cfg.password, "password", "", "refused: the password comes from $"+envPassword+" only")
	fs.BoolVar(&tlsOn, "tls", false, "connect with TLS")
	fs.StringVar(&caFile, "tls-ca", "", "PEM `file` of the CAs that sign the servers' certificates (default: system roots)")
	fs.StringVar(&certFile, "tls-cert", "", "PEM `file` of the client certificate (with -tls-key)")
	fs.StringVar(&keyFile, "tls-key", "", "PEM `file` of the client certificate's key (with -tls-cert)")
	fs.StringVar(&tlsServer, "tls-server-name", "", "`name` the servers' certificates must be valid for (default: each address's host)")
	fs.BoolVar(&insecure, "tls-insecure-skip-verify", false, "do not verify the servers' certificates (testing only)")
	fs.DurationVar(&cfg.maxAge, "max-age", 24*time.Hour, "report locks acquired longer ago than this as over_age; 0 turns the check off")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "bound on the whole run: scan and fix")
	fs.BoolVar(&cfg.json, "json", false, "print a JSON document (see the README) instead of a table")
	fs.IntVar(&cfg.last, "last", 20, "history: how many of the newest records to print")
	fs.BoolVar(&cfg.fix, "fix", false, "delete the leaks found, by compare-and-delete (default: dry run)")
	fs.StringVar(&cfg.tag, "tag", "", "status: list only the jobs carrying this `tag`; pause, resume, trigger, history: act on each of them, without JOB")
	fs.BoolVar(&cfg.force, "force", false, "pause, resume, trigger, history: act on a job no live replica publishes (not deployed yet, or gone)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: redcronctl -addrs host:port,host:port,... [flags] [leaks | status | history JOB | pause JOB | resume JOB | trigger JOB]\n"+
			"       redcronctl -addrs ... -tag TAG [status | history | pause | resume | trigger]\n\n"+
			"leaks (the default) scans the Redis masters for leaked redcron locks; -fix deletes them.\n"+
			"status lists every job's lock: paused or not, its holder and the tick it claims; and the live replicas:\n"+
			"their versions, job tables (marked when they differ), clock offsets and last heartbeats.\n"+
			"history JOB prints the job's last runs (-last N): replica, tick, result, error, fence.\n"+
			"pause JOB stops every replica from running the job's ticks until resume JOB.\n"+
			"trigger JOB has one replica run the job once, now, and waits for it to start.\n"+
			"Flags may come before or after the command. Exit status: 0 clean (or done), 1 leaks found, 2 error.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	positional, err := parseInterleaved(fs, args)
	// The flag package may echo a value (for example a password given to
	// the wrong flag): redact what it printed before passing it on.
	_, _ = io.WriteString(stderr, redact.New(nil, cfg.password, env(envPassword)).Redact(flagOut.String()))
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{msg: err.Error(), printed: true}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["tag"] && cfg.tag == "" {
		return nil, usagef("-tag: empty")
	}
	if err := parseCommand(&cfg, positional); err != nil {
		return nil, err
	}
	if cfg.tag != "" && cfg.command == "" {
		return nil, usagef("-tag: only status, pause, resume, trigger and history take it")
	}

	// Flags override the environment.
	addrSource := "-addrs"
	if !set["addrs"] {
		addrs, addrSource = env(envAddrs), envAddrs
	}
	if !set["username"] {
		cfg.username = env(envUsername)
	}
	if set["password"] {
		return nil, usagef("-password: the password comes from %s only (a flag is visible to other local users in the process list)", envPassword)
	}
	cfg.password = env(envPassword)

	if strings.TrimSpace(addrs) == "" {
		return nil, usagef("-addrs is required (or set %s): the Redis masters, host:port,host:port,...", envAddrs)
	}
	seen := map[string]bool{}
	for a := range strings.SplitSeq(addrs, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, usagef("%s: empty address in %q", addrSource, addrs)
		}
		if strings.Contains(a, "@") { // user info: not echoed, it may hold a password
			return nil, usagef("%s: an address holds \"@\": want host:port, the password in %s", addrSource, envPassword)
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, usagef("%s: %q: %v", addrSource, a, err)
		}
		if host == "" || port == "" {
			return nil, usagef("%s: %q: want host:port", addrSource, a)
		}
		if seen[a] {
			return nil, usagef("%s: %s appears twice; list each master once", addrSource, a)
		}
		seen[a] = true
		cfg.addrs = append(cfg.addrs, a)
	}
	if cfg.prefix == "" {
		return nil, usagef("-prefix: empty (the default is %q)", engine.DefaultPrefix)
	}
	if _, err := engine.NewKeyspace(cfg.prefix); err != nil {
		return nil, usagef("-prefix: %v", err)
	}
	if cfg.maxAge < 0 {
		return nil, usagef("-max-age: %v is negative (0 turns the over-age check off)", cfg.maxAge)
	}
	if cfg.force && cfg.job == "" && cfg.tag == "" {
		return nil, usagef("-force: only pause, resume, trigger and history take it")
	}
	if cfg.last < 1 {
		return nil, usagef("-last: %d: must be at least 1", cfg.last)
	}
	if cfg.timeout <= 0 {
		return nil, usagef("-timeout: %v: must be positive", cfg.timeout)
	}
	if cfg.tls, err = tlsConfig(tlsOn, set, caFile, certFile, keyFile, tlsServer, insecure); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// parseInterleaved parses args with fs, flags before and after the
// command and its job alike ("status -json", "history -last 5 JOB"), and
// returns the arguments that are not flags, in their order. After "--"
// every argument is taken as one that is not a flag.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}

// tlsConfig builds the TLS configuration the flags ask for, or nil for
// plain TCP.
func tlsConfig(on bool, set map[string]bool, caFile, certFile, keyFile, serverName string, insecure bool) (*tls.Config, error) {
	if !on {
		for _, name := range []string{"tls-ca", "tls-cert", "tls-key", "tls-server-name", "tls-insecure-skip-verify"} {
			if set[name] {
				return nil, usagef("-%s needs -tls", name)
			}
		}
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, usagef("-tls-ca: %v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usagef("-tls-ca: %s: no PEM certificate found", caFile)
		}
	}
	switch {
	case certFile != "" && keyFile == "":
		return nil, usagef("-tls-cert needs -tls-key")
	case keyFile != "" && certFile == "":
		return nil, usagef("-tls-key needs -tls-cert")
	case certFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, usagef("-tls-cert/-tls-key: %v", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
