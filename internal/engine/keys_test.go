package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redcron/redcron/internal/engine"
)

func TestKeyspace(t *testing.T) {
	ks, err := engine.NewKeyspace("")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ks.Lock("nightly report")
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("redcron:{s%d}:", engine.ShardOf("nightly report"))
	if k.Lock != tag+"nightly report:lock" || k.State != tag+"state" || k.Ledger != tag+"ledger" ||
		k.Pause != tag+"nightly report:paused" || k.Trigger != tag+"nightly report:trigger" {
		t.Errorf("keys %+v", k)
	}
	for key, want := range map[string]engine.KeyKind{k.Lock: engine.KindLock, k.State: engine.KindState, k.Ledger: engine.KindLedger,
		k.Pause: engine.KindPause, k.Trigger: engine.KindTrigger,
		"redcron:{s99}:state": engine.KindForeign, "redcron:{s1x}:ledger": engine.KindForeign, "redcron:{nightly report}:lock": engine.KindForeign,
		fmt.Sprintf("redcron:{s%d}:nightly report:lock", (engine.ShardOf("nightly report")+1)%engine.Shards): engine.KindForeign} {
		if kind, name := ks.Parse(key); kind != want || (kind == engine.KindLock && name != "nightly report") {
			t.Errorf("Parse(%q) = %v, %q; want %v", key, kind, name, want)
		}
	}
	if hb := ks.Heartbeat("i-1"); hb != "redcron:hb:i-1" {
		t.Errorf("heartbeat key %q", hb)
	}
}

func TestKeyspaceRejects(t *testing.T) {
	for _, p := range []string{"a b", "a*", "{x}", ":a", "a:", strings.Repeat("p", 201)} {
		if _, err := engine.NewKeyspace(p); err == nil || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("NewKeyspace(%q) = %v, want an error naming the prefix", p, err)
		}
	}
	ks, _ := engine.NewKeyspace("app")
	for _, n := range []string{"", " lead", "trail ", "a{b", "a}b", "tab\there", "\xff", strings.Repeat("n", 201)} {
		if _, err := ks.Lock(n); err == nil || !strings.Contains(err.Error(), "lock name") {
			t.Errorf("Lock(%q) = %v, want an error naming the lock name", n, err)
		}
	}
}
