package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestNoSecretInRunErrors: a run's error that holds the nodes' password
// and a URL's is shown redacted by history (table and -json) and status
// -json, and not at all by the status table.
func TestNoSecretInRunErrors(t *testing.T) {
	t.Parallel()
	const (
		password = "s3cret-Pa55"
		inURL    = "hunter2"
	)
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	ctx := context.Background()
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("export")
	tick := time.Now().Add(-time.Minute).Truncate(time.Second)
	rec := engine.Record{Tick: tick.UnixMilli(), Error: "replica-a: dial redis://ops:" + inURL + "@db:6379/0 failed, auth " + password + " refused"}
	for _, s := range c.Nodes() {
		if err := s.Client(t).ConfigSet(ctx, "requirepass", password).Err(); err != nil {
			t.Fatal(err)
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: password, MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		n, _ := engine.NewNode(s.Addr(), cl)
		if err := n.AddMissed(ctx, lk, rec, 100, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	addrs := strings.Join(c.Addrs(), ",")
	env := []string{"REDCRON_PASSWORD=" + password}
	for _, args := range [][]string{{"-force", "history", "export"}, {"-json", "-force", "history", "export"}, {"status"}, {"-json", "status"}} {
		o := exe(t, bin, env, append([]string{"-addrs", addrs}, args...)...)
		out := o.stdout + o.stderr
		shown := args[0] != "status" // the status table shows no error
		if o.code != 0 || strings.Contains(out, password) || strings.Contains(out, inURL) ||
			shown && !strings.Contains(out, "redis://ops:[redacted]@db:6379/0 failed, auth [redacted] refused") {
			t.Errorf("want the run's error, redacted:\n%s", o)
		}
	}
}
