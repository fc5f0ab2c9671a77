// The system's end-to-end tests: the fleet under faults (the nemesis, node
// restarts, lost ticks), across processes (replicas SIGKILLed), and its
// housekeeping (job tables, missed ticks, triggers, shards); the root
// package keeps the scheduler's and the front door's.
package systemtest_test

import (
	"os"
	"testing"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
)

// TestMain silences go-redis's logging of the failed dials that the
// tests' killed and stopped servers cause on purpose. Started by the
// nemesis (or a process test) as one of its replica processes, the test
// binary runs that replica instead of the tests.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	if cfg := os.Getenv(nemesisEnv); cfg != "" {
		os.Exit(runReplicaProcess(cfg))
	}
	os.Exit(m.Run())
}

// observerFunc adapts a function to an observer of scheduler events.
type observerFunc func(scheduler.Event)

func (o observerFunc) Observe(e scheduler.Event) { o(e) }
