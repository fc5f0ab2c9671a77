package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/redistest"
)

// TestMergedCallsFailAlone: adjacent calls of one script, sent as one
// merged script call, each get their own answer, and one lock's bad state
// fails that lock alone: the others are released.
func TestMergedCallsFailAlone(t *testing.T) {
	s := redistest.Start(t, 1).Node(0)
	rc := s.Client(t)
	n, err := NewNode(s.Addr(), rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ks, _ := NewKeyspace("t")
	names := []string{"a", "bad", "c", "d"}
	keys := make([]LockKeys, len(names))
	for i, name := range names {
		keys[i], _ = ks.Lock(name)
		rc.Set(ctx, keys[i].Lock, "v-"+name, time.Minute)
	}
	rc.Set(ctx, keys[1].State, "not a hash", 0)

	type answer struct {
		ok  bool
		err error
	}
	answers := make([]chan answer, len(names))
	calls := make([]*call, len(names))
	for i := range names {
		answers[i] = make(chan answer, 1)
		value := "v-" + names[i]
		if i == 3 {
			value = "not ours"
		}
		calls[i] = &call{ctx: ctx, script: releaseScript, keys: []string{keys[i].Lock, keys[i].State, keys[i].Ledger},
			args: []any{int64(60000), names[i], value, int64(1000), "", "", 0, 0, 0}, items: 1, done: func(cmd *redis.Cmd) {
				res, err := releaseScript.answer(cmd, 1)
				var ok bool
				if err == nil {
					ok, err = parseBool(res)
				}
				answers[i] <- answer{ok, err}
			}}
	}
	// As the worker sends a batch: merged into one script call (sent
	// again after NOSCRIPT on this fresh server, so counted twice).
	n.batch.flush(calls)
	if st := n.Stats(); st.Calls != 1 && st.Calls != 2 {
		t.Errorf("stats %+v: want the 4 releases in one script call", st)
	}
	for i, name := range names {
		a := <-answers[i]
		switch name {
		case "bad":
			if !ServerError(a.err) || !strings.Contains(a.err.Error(), "WRONGTYPE") {
				t.Errorf("lock %s: %v, %v; want a WRONGTYPE server error", name, a.ok, a.err)
			}
		case "d":
			if a.err != nil || a.ok {
				t.Errorf("lock %s (another value): %v, %v; want not released", name, a.ok, a.err)
			}
		default:
			if a.err != nil || !a.ok {
				t.Errorf("lock %s: %v, %v; want released", name, a.ok, a.err)
			}
			n, err := rc.Exists(ctx, keys[i].Lock).Result()
			if err != nil {
				t.Fatalf("EXISTS lock %s: %v", name, err)
			}
			mark, err := rc.HGet(ctx, keys[i].State, keys[i].MarkField()).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("HGET mark of %s: %v", name, err)
			}
			if n != 0 || mark != "1000" {
				t.Errorf("lock %s: exists %d, mark %q; want 0 and \"1000\" (released, mark raised)", name, n, mark)
			}
		}
	}
}
