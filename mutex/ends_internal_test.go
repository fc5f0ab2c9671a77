package mutex

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// TestByShard: ends grouped by shard, the shards in the order first seen,
// each shard's ends in their order.
func TestByShard(t *testing.T) {
	end := func(state, name string) partEnd {
		return partEnd{FreeRequest: engine.FreeRequest{Keys: engine.LockKeys{Name: name, State: state}}}
	}
	es := []partEnd{end("s2", "a"), end("s1", "b"), end("s2", "c"), end("s3", "d"), end("s1", "e"), end("s2", "f")}
	var got []string
	for _, e := range byShard(es) {
		got = append(got, e.Keys.State+"/"+e.Keys.Name)
	}
	if want := []string{"s2/a", "s2/c", "s2/f", "s1/b", "s1/e", "s3/d"}; !slices.Equal(got, want) {
		t.Errorf("byShard: %q, want %q", got, want)
	}
}

// TestTakeOld: the ends queued at the due time or before leave, by node
// and in their order; the others stay, and the oldest of them says when
// the next flush is due.
func TestTakeOld(t *testing.T) {
	t0 := time.Unix(1000, 0)
	end := func(name string, at time.Duration) partEnd {
		return partEnd{FreeRequest: engine.FreeRequest{Keys: engine.LockKeys{Name: name}}, queued: t0.Add(at)}
	}
	pending := [][]partEnd{
		{end("a", 0), end("b", 3*time.Second), end("c", time.Second)},
		nil,
		{end("d", 2*time.Second), end("e", 4*time.Second)},
	}
	old, next := takeOld(pending, t0.Add(time.Second))
	names := func(es [][]partEnd) (out []string) {
		for i, l := range es {
			for _, e := range l {
				out = append(out, strconv.Itoa(i)+e.Keys.Name)
			}
		}
		return out
	}
	if got, want := names(old), []string{"0a", "0c"}; !slices.Equal(got, want) {
		t.Errorf("taken %q, want %q", got, want)
	}
	if got, want := names(pending), []string{"0b", "2d", "2e"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	if want := t0.Add(2 * time.Second); !next.Equal(want) {
		t.Errorf("next flush from %v, want %v", next, want)
	}
	if _, next := takeOld(pending, t0.Add(time.Hour)); !next.IsZero() || len(names(pending)) != 0 {
		t.Errorf("all due: %q left, next %v", names(pending), next)
	}
}
