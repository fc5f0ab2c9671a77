package admin_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/store"
)

// A deploy script: it pauses a job for the deploy, has one replica run it
// once meanwhile (a manual run is not refused), resumes it and reads its
// history. The fleet, a replica with the job "nightly-report", runs on the
// masters TestMain starts.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var nodes []*store.Node
	for _, addr := range masters { // every independent Redis master of the fleet
		n, err := store.NewNode(addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}))
		if err != nil {
			log.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	c, err := admin.New(nodes, admin.Options{Operator: "deploy-bot"})
	if err != nil {
		log.Fatal(err)
	}

	// No replica runs a tick of the job until it is resumed.
	if _, err := c.Pause(ctx, "nightly-report"); err != nil {
		log.Fatal(err) // scheduler.ErrUnknownJob: no live replica has the job
	}
	st, err := c.Status(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range st.Jobs {
		fmt.Printf("%s: paused on %d of %d nodes\n", j.Name, j.PausedOn, len(st.Nodes))
	}

	// One replica runs it once, now; Trigger waits for the run's record.
	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	run, _, err := c.Trigger(tctx, "nightly-report")
	tcancel()
	if err != nil {
		log.Fatal(err) // context.DeadlineExceeded: no replica took it
	}
	fmt.Println("triggered: run by", run.Owner)

	if _, err := c.Resume(ctx, "nightly-report"); err != nil {
		log.Fatal(err)
	}

	records, _, err := c.History(ctx, "nightly-report", 20)
	if err != nil {
		log.Fatal(err)
	}
	var actions []string
	for _, r := range records {
		switch {
		case r.State == "operator":
			actions = append(actions, r.Result+" by "+r.Owner)
		case r.Fence == run.Fence:
			fmt.Println("its run is in the history, manual:", r.Tick.IsZero())
		}
	}
	slices.Sort(actions) // two actions within a millisecond may come in either order
	fmt.Println(strings.Join(actions, ", "))
	// Output:
	// nightly-report: paused on 3 of 3 nodes
	// triggered: run by replica-1
	// its run is in the history, manual: true
	// paused by deploy-bot, resumed by deploy-bot, triggered by deploy-bot
}
