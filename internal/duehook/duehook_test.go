package duehook

import (
	"testing"
	"time"
)

// TestSkips: the hook keeps the newest skips, at most maxJobSkips of one
// job, so that a job skipped every second leaves room for the others; held
// and already_run (another replica claimed the tick) are not kept.
func TestSkips(t *testing.T) {
	var h Hook
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	h.Skipped("rare", at(1), "no_quorum")
	h.Skipped("other", at(1), "held")
	h.Skipped("other", at(1), "already_run")
	for tick := int64(2); tick < 100; tick++ {
		h.Skipped("busy", at(tick), "paused")
	}
	got := h.Skips(at(0))
	if len(got) != maxJobSkips+1 || got[0].Job != "rare" || got[len(got)-1].Tick != 99 {
		t.Fatalf("skips %+v; want rare's skip and busy's newest %d", got, maxJobSkips)
	}
	if since := h.Skips(at(95)); len(since) != 5 {
		t.Errorf("skips since tick 95: %+v, want 5", since)
	}
	for i := range 2 * maxSkips {
		h.Skipped(string(rune('a'+i%26))+string(rune('a'+i/26)), at(int64(1000+i)), "overlap")
	}
	if got := h.Skips(at(0)); len(got) != maxSkips || got[maxSkips-1].Tick != int64(1000+2*maxSkips-1) {
		t.Errorf("after many jobs: %d skips, newest %+v; want %d, the newest kept", len(got), got[len(got)-1], maxSkips)
	}
}
