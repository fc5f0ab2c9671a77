package engine_test

import (
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
	if k.Lock != "redcron:{nightly report}:lock" || k.State != "redcron:{nightly report}:state" {
		t.Errorf("keys %+v", k)
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
