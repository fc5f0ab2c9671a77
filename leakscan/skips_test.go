package leakscan

import (
	"testing"

	"github.com/redcron/redcron/internal/engine"
)

// TestSkipLog: the log keeps the newest skips, at most maxJobSkips of one
// job, so that a job skipped every second leaves room for the others.
func TestSkipLog(t *testing.T) {
	var l skipLog
	l.add(engine.BeatSkip{Job: "rare", Tick: 1, Reason: "no_quorum"})
	for tick := int64(2); tick < 100; tick++ {
		l.add(engine.BeatSkip{Job: "busy", Tick: tick, Reason: "paused"})
	}
	got := l.list
	if len(got) != maxJobSkips+1 || got[0].Job != "rare" || got[len(got)-1].Tick != 99 {
		t.Fatalf("log %+v; want rare's skip and busy's newest %d", got, maxJobSkips)
	}
	for i := range 2 * maxSkips {
		l.add(engine.BeatSkip{Job: string(rune('a'+i%26)) + string(rune('a'+i/26)), Tick: int64(1000 + i)})
	}
	if len(l.list) != maxSkips || l.list[maxSkips-1].Tick != int64(1000+2*maxSkips-1) {
		t.Errorf("after many jobs: %d skips, newest %+v; want %d, the newest kept", len(l.list), l.list[len(l.list)-1], maxSkips)
	}
}
